import { openPgHistoryStore } from '../../../src/store/postgres/open.js';
import { PgAnalysisStore } from '../../../src/store/postgres/PgAnalysisStore.js';
import { describeWithPostgres } from '../../helpers/postgres.js';
import { analysisStoreContract } from '../analysisContract.js';

describeWithPostgres('analysis store contract: PostgreSQL', (server) => {
  analysisStoreContract(() => ({
    async open() {
      const { store, pool } = await openPgHistoryStore(await server().createDatabase(), { poolSize: 2 });
      const storedQueries = async (runId: string) =>
        (await pool.query('SELECT "query", "baselineQuery" FROM "AnalysisMeasurement" WHERE "runId" = $1 ORDER BY "id"', [runId])).rows;
      return { store: new PgAnalysisStore(pool), storedQueries, close: () => store.close() };
    },
  }));
});
