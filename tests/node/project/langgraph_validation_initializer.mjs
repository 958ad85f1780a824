// The CheckpointerTestInitializer LangGraph.js's own checkpoint validation
// suite (@langchain/langgraph-checkpoint-validation) runs against: the
// makers-store saver over the store RPC at MAKERS_STORE_RPC. The suite wants
// each checkpointer to start empty, so destroying one deletes every thread.
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

let client;

export default {
  checkpointerName: 'makers-store',
  beforeAll() {
    client = connect(process.env.MAKERS_STORE_RPC);
  },
  afterAll() {
    client.close();
  },
  createCheckpointer() {
    return createContextStore(client, { projectRoot: process.env.MAKERS_TEST_PROJECT }).langgraphCheckpointer;
  },
  async destroyCheckpointer(checkpointer) {
    const threads = new Set();
    for await (const tuple of checkpointer.list({})) threads.add(tuple.config.configurable.thread_id);
    for (const thread of threads) await checkpointer.deleteThread(thread);
  },
};
