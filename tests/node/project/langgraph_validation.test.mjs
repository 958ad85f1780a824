// LangGraph.js's own checkpointer validation suite, run by vitest against the
// makers-store saver (tests/node/test_node_langgraph.py starts the store RPC).
import { validate } from '@langchain/langgraph-checkpoint-validation';
import initializer from './langgraph_validation_initializer.mjs';

validate(initializer);
