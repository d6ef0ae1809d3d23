/** The node agents' UI documents (queries.graphql here), typed by codegen in the shared UI's generated module. */
export { NodeAgentReplacedDocument as SUB_NODE_AGENT_REPLACED, NodeAgentSetsDocument as NODE_AGENT_SETS } from '../../../ui/client/generated/graphql.js';
