import { openPgHistoryStore } from '../../../src/store/postgres/open.js';
import { PgMemberClusterStore } from '../../../src/store/postgres/PgMemberClusterStore.js';
import { describeWithPostgres } from '../../helpers/postgres.js';
import { memberClusterContract } from '../memberClusterContract.js';

describeWithPostgres('member cluster store contract: PostgreSQL', (server) => {
  let url = '';
  const on = async () => {
    const { store, pool } = await openPgHistoryStore(url, { poolSize: 2 });
    return { store: new PgMemberClusterStore(pool), close: () => store.close() };
  };
  memberClusterContract(() => ({
    async open() {
      url = await server().createDatabase();
      return on();
    },
    connect: on,
  }));
});
