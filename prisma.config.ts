// Default Prisma CLI configuration: follows DATABASE_URL's scheme, so `npm run db:migrate` works on either store.
// The per-provider configurations are prisma.sqlite.config.ts and prisma.postgresql.config.ts.
const url = process.env.DATABASE_URL ?? 'file:./data/rollplane.db';
const chosen = /^postgres(ql)?:\/\//.test(url) ? await import('./prisma.postgresql.config.js') : await import('./prisma.sqlite.config.js');

export default chosen.default;
