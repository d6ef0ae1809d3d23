/** The agent pools' UI documents (queries.graphql here), typed by codegen in the shared UI's generated module. */
export { AgentPoolsDocument as AGENT_POOLS, AgentRecreatedDocument as SUB_AGENT_RECREATED } from '../../../ui/client/generated/graphql.js';
export type { AgentRecreationFragment as AgentRecreation } from '../../../ui/client/generated/graphql.js';
