import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { AppError, ConflictError, ErrorCode, NotFoundError, ValidationError } from '../errors.js';
import { TokenCache } from './TokenCache.js';
import type { TokenRow, TokenStore } from './TokenStore.js';
import { checkPageSize, decodeCursor, encodeCursor, pageOfRows } from '../util/pagination.js';
import { isDns1123Label, namesProblem } from '../util/dnsNames.js';
import { ROLES, type Principal, type Role } from './roles.js';

export class UnauthenticatedError extends AppError {
  constructor(message: string) {
    super(ErrorCode.Unauthenticated, message);
  }
}

export interface ApiTokenView {
  id: string;
  name: string;
  role: Role;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

const TOKEN_PREFIX = 'rp_';
const BAD_TOKEN = 'invalid, expired or revoked token';
/** lastUsedAt is written at most this often per token (it is a hint, not an audit). */
const LAST_USED_RESOLUTION_MS = 60_000;
const MAX_EXPIRY_SECONDS = 10 * 365 * 24 * 3600;

const newTokenId = () => `tok_${randomUUID().replace(/-/g, '').slice(0, 20)}`;

function hash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function view(row: {
  id: string;
  name: string;
  role: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}): ApiTokenView {
  return {
    id: row.id,
    name: row.name,
    role: row.role as Role,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    lastUsedAt: row.lastUsedAt,
  };
}

/**
 * Bearer tokens: random 256-bit secrets shown once, stored only as SHA-256 hashes (a fast hash is right for
 * high-entropy random secrets; nothing to brute-force). On SQLite every request reads its token (in-process, ~40 µs);
 * on PostgreSQL a token read answers that token's requests for up to a second (TokenCache, which says how promptly a
 * revocation takes effect: at once here, on other replicas when the store's announcement arrives, within the second
 * when it is lost). The `onRevoked` listeners close the token's open subscriptions at once: here directly, on other
 * replicas through the announcement (`revokedElsewhere`).
 */
export class TokenService {
  private readonly revokedListeners: ((tokenId: string) => void)[] = [];
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly cache: TokenCache | undefined;

  /**
   * `cacheTtlMs`: how long a token read answers its next requests (TokenCache); 0 reads the token on every request.
   * The composition root sets it for a store across the network (PostgreSQL), where the read is a round trip.
   */
  constructor(
    private readonly store: TokenStore,
    private readonly now: () => number = Date.now,
    cacheTtlMs = 0,
  ) {
    this.cache = cacheTtlMs > 0 ? new TokenCache(now, cacheTtlMs) : undefined;
  }

  onRevoked(listener: (tokenId: string) => void): void {
    this.revokedListeners.push(listener);
  }

  async create(input: { name: string; role: Role; expiresInSeconds?: number | null }): Promise<{ token: ApiTokenView; secret: string }> {
    const nameProblem = namesProblem(isDns1123Label(input.name));
    if (nameProblem) throw new ValidationError('input.name', `must be a DNS-1123 label: ${nameProblem}`);
    if (!ROLES.includes(input.role)) throw new ValidationError('input.role', `must be one of ${ROLES.join(', ')}`);
    const expires = input.expiresInSeconds;
    if (expires !== undefined && expires !== null && (!Number.isInteger(expires) || expires < 60 || expires > MAX_EXPIRY_SECONDS)) {
      throw new ValidationError('input.expiresInSeconds', `must be between 60 and ${MAX_EXPIRY_SECONDS} seconds`);
    }
    const secret = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const row = await this.store.insert({
      id: newTokenId(),
      name: input.name,
      role: input.role,
      hash: hash(secret),
      createdAt: new Date(this.now()),
      expiresAt: expires ? new Date(this.now() + expires * 1000) : null,
    });
    if (!row) throw new ConflictError(`a token named "${input.name}" already exists`);
    return { token: view(row), secret };
  }

  /**
   * Creates the `admin` token with this secret, or rotates the existing one to it (e.g. from a Kubernetes Secret).
   * Returns false when the secret is that of the revoked admin token (left revoked).
   */
  async ensureAdmin(secret: string): Promise<boolean> {
    const existing = await this.store.findByName('admin');
    if (existing) {
      // A revoked admin token stays revoked when the same secret comes back on a restart; only a new secret (a
      // deliberate rotation) brings the admin token back. Returns false so that start-up can say so.
      if (existing.revokedAt && existing.hash === hash(secret)) return false;
      await this.store.reissue(existing.id, { hash: hash(secret), role: 'admin' });
      this.cache?.forget(existing.id);
    } else if (
      !(await this.store.insert({ id: newTokenId(), name: 'admin', role: 'admin', hash: hash(secret), createdAt: new Date(this.now()), expiresAt: null }))
    ) {
      // Another replica starting at the same time created it meanwhile: set it as this one would have.
      if (await this.store.findByName('admin')) return this.ensureAdmin(secret);
      throw new ConflictError('the configured admin token is already the secret of another token');
    }
    return true;
  }

  /** On the very first start (no token at all), creates an admin token and returns its secret to print once. */
  async bootstrapAdmin(): Promise<string | undefined> {
    if ((await this.store.count()) > 0) return undefined;
    try {
      const { secret } = await this.create({ name: 'admin', role: 'admin' });
      return secret;
    } catch (error) {
      // Replicas starting together on an empty database: another one created it (and printed it) first.
      if (error instanceof ConflictError && (await this.store.findByName('admin'))) return undefined;
      throw error;
    }
  }

  /** Resolves `Authorization: Bearer <secret>`; throws UNAUTHENTICATED with the reason. */
  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) throw new UnauthenticatedError('missing bearer token: send Authorization: Bearer <token>');
    const match = /^Bearer\s+(\S{1,512})$/i.exec(header.trim());
    if (!match) throw new UnauthenticatedError('malformed Authorization header: expected "Bearer <token>"');
    const secret = match[1]!;
    const digest = hash(secret);
    const row = await this.findByHash(digest);
    // The lookup is by hash; compare again in constant time to keep the check honest if the index changes.
    // One message for unknown, revoked and expired tokens: a caller holding a stolen secret learns nothing from it.
    if (!row || !timingSafeEqual(Buffer.from(row.hash, 'hex'), Buffer.from(digest, 'hex'))) throw new UnauthenticatedError(BAD_TOKEN);
    if (row.revokedAt) throw new UnauthenticatedError(BAD_TOKEN);
    if (row.expiresAt && row.expiresAt.getTime() <= this.now()) throw new UnauthenticatedError(BAD_TOKEN);
    const last = this.lastUsedWritten.get(row.id) ?? 0;
    if (this.now() - last > LAST_USED_RESOLUTION_MS) {
      this.lastUsedWritten.set(row.id, this.now());
      // A hint only: a database that cannot be written right now (disk full) must not turn every request into a 500.
      // /readyz reports that condition.
      await this.store.touch(row.id, new Date(this.now())).catch(() => this.lastUsedWritten.delete(row.id));
    }
    return { kind: 'token', tokenId: row.id, name: row.name, role: row.role as Role, expiresAt: row.expiresAt };
  }

  /** The token with this hash: recently read (TokenCache), or read now. */
  private async findByHash(digest: string): Promise<TokenRow | undefined> {
    const cache = this.cache;
    if (!cache) return this.store.findByHash(digest);
    const cached = cache.get(digest);
    if (cached) return cached;
    const generation = cache.generation();
    const readAt = this.now();
    const row = await this.store.findByHash(digest);
    if (row) cache.put(digest, row, generation, readAt);
    return row;
  }

  /** A token's name (revoked or expired ones too), for showing who did something; undefined for an unknown id. */
  async nameOf(tokenId: string): Promise<string | undefined> {
    return (await this.store.findById(tokenId))?.name;
  }

  /** Whether a token is still usable (checked again for long-lived subscriptions). */
  async isActive(tokenId: string): Promise<boolean> {
    const row = await this.store.findById(tokenId);
    return !!row && !row.revokedAt && !(row.expiresAt && row.expiresAt.getTime() <= this.now());
  }

  async revoke(id: string): Promise<ApiTokenView> {
    // Forgotten before and after: a request on its way in while the revocation commits must not keep the old row.
    this.cache?.forget(id);
    const updated = await this.store.revoke(id, new Date(this.now()));
    if (!updated) throw new NotFoundError(`token ${id} not found`);
    this.revokedElsewhere(id);
    return view(updated);
  }

  /** Revocations can no longer be announced to this replica: every request reads its token until they can again. */
  announcementsLost(): void {
    this.cache?.suspend();
  }

  announcementsBack(): void {
    this.cache?.resume();
  }

  /** A revocation committed by any replica (the store's announcement): closes the token's subscriptions here. */
  revokedElsewhere(tokenId: string): void {
    this.cache?.forget(tokenId);
    for (const listener of this.revokedListeners) listener(tokenId);
  }

  /**
   * Checks tokens this replica holds subscriptions for, and treats those no longer usable (revoked, perhaps while an
   * announcement was lost, or expired) as revoked. Run on the store's "check everything" wake-ups.
   */
  async recheck(tokenIds: Iterable<string>): Promise<void> {
    // Announcements may have been missed: no token read before now answers another request.
    this.cache?.forget();
    for (const id of [...tokenIds]) if (!(await this.isActive(id))) this.revokedElsewhere(id);
  }

  async list(first: number | undefined, after: string | undefined) {
    const size = checkPageSize(first, 100);
    const cursor = decodeCursor(after, (v): v is { id: string } => typeof v === 'object' && v !== null && typeof (v as { id: unknown }).id === 'string');
    const rows = await this.store.page(cursor?.id, size + 1);
    return { ...pageOfRows(rows, size, view), cursorOf: (t: ApiTokenView) => encodeCursor({ id: t.id }) };
  }
}
