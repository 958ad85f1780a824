// The whole-thread calls of the Node saver (deleteThread, copyThread, prune)
// on a thread langgraph_turn.mjs wrote. Usage: node langgraph_threads.mjs <thread> <copy>
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const [thread, copy] = process.argv.slice(2);
const client = connect(process.env.MAKERS_STORE_RPC);
const saver = createContextStore(client, {}).langgraphCheckpointer;
const count = async (threadId) => {
  let n = 0;
  for await (const _ of saver.list({ configurable: { thread_id: threadId } })) n += 1;
  return n;
};
const out = { before: await count(thread) };
await saver.copyThread(thread, copy);
out.copied = await count(copy);
await saver.prune([copy], { strategy: 'keep_latest' });
out.pruned = await count(copy);
out.latestKept = (await saver.getTuple({ configurable: { thread_id: copy } }))?.checkpoint.channel_values.messages.length;
await saver.deleteThread(thread);
out.deleted = await count(thread);
out.missing = (await saver.getTuple({ configurable: { thread_id: thread } })) ?? null;
client.close();
process.stdout.write(JSON.stringify(out));
