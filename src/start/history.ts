import type { Config } from '../config.js';
import { bootstrapAdminToken } from '../auth/bootstrap.js';
import { TOKEN_CACHE_TTL_MS } from '../auth/TokenCache.js';
import { TokenService } from '../auth/TokenService.js';
import { AuditLog } from '../domain/AuditLog.js';
import { InProcessEventBus } from '../domain/EventBus.js';
import { EventLog } from '../domain/EventLog.js';
import { RolloutService } from '../domain/RolloutService.js';
import { KIND_CONTRACTS } from '../kinds/index.js';
import type { Logger } from '../log.js';
import { countHistoryEvents, type AppMetrics } from '../metrics.js';
import { startWaveMetrics } from '../waveMetrics.js';
import { openDatabase } from '../store/db.js';
import { historyReadiness } from '../store/health.js';
import { parseDatabaseUrl } from '../util/databaseUrl.js';
import { compose } from './compose.js';
import { startGateTypes } from './gateTypes.js';

/**
 * The history: the database (migrated), the event log and its bus, the rollout service, tokens (the admin token
 * bootstrapped) and the audit log (pruned at start and hourly).
 */
export async function startHistory(config: Config, { logger, metrics }: { logger: Logger; metrics: AppMetrics }) {
  return compose(logger, async (started) => {
    const db = await openDatabase(config.databaseUrl);
    started(() => db.close());
    if (db.migrations.applied.length > 0) logger.info({ applied: db.migrations.applied, database: db.location }, 'database migrated');
    const bus = new InProcessEventBus();
    countHistoryEvents(metrics, bus);
    const waveMetrics = startWaveMetrics(metrics.registry, bus);
    // PostgreSQL: commits of concurrent transactions (and of other replicas) finish out of id order; publish from the store.
    const events = new EventLog(db.store, bus, { publishFromStore: db.provider === 'postgresql' });
    // The gate types staged runs may use (ADR 0068); their background work runs while the controllers lead.
    const gateTypes = startGateTypes(config, { db, metrics, logger });
    started(() => gateTypes.stop());
    const rollouts = new RolloutService(db.store, events, KIND_CONTRACTS, gateTypes.types, gateTypes.targetGates);
    // Events committed by other replicas reach this one's subscribers through the store (PostgreSQL only); whoever
    // backs off while the database is away hears when it is back.
    const databaseBack: (() => void)[] = [];
    started(
      await db.watchEvents(
        (upTo) => void events.catchUp(upTo),
        (error) => logger.warn({ err: error }, 'the event notification connection failed; reconnecting'),
        () => {
          for (const listener of databaseBack) listener();
        },
      ),
    );
    // PostgreSQL: a token read is a round trip, kept for a second (auth/TokenCache.ts); SQLite reads it every time.
    const tokens = new TokenService(db.tokens, Date.now, db.provider === 'postgresql' ? TOKEN_CACHE_TTL_MS : 0);
    const audit = new AuditLog(db.audit);
    await bootstrapAdminToken(config, tokens, logger);
    started(await audit.startPruning({ days: config.audit.retentionDays, maxEntries: config.audit.maxEntries }, logger));
    const target = parseDatabaseUrl(config.databaseUrl);
    const sqliteFile = target.provider === 'sqlite' ? target.file : undefined;
    return {
      db,
      bus,
      events,
      rollouts,
      gateTypes,
      tokens,
      audit,
      sqliteFile,
      waveMetrics,
      readiness: historyReadiness(db, sqliteFile, logger),
      onDatabaseBack: (listener: () => void) => void databaseBack.push(listener),
    };
  });
}

export type History = Awaited<ReturnType<typeof startHistory>>;
