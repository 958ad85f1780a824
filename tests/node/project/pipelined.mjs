// Many calls in flight at once on one connection (answers matched by id):
// appends to one conversation and reads, all started before any answer.
// Usage: node pipelined.mjs <conversation id> <count>
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const [conversationId, count] = process.argv.slice(2);
const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId });
const calls = [];
for (let i = 0; i < Number(count); i += 1) {
  calls.push(store.appendMessage({ conversationId, role: 'user', content: `m${i}` }));
  calls.push(store.state.set(`k${i}`, i));
  calls.push(store.getConversation(conversationId).then((meta) => meta?.messageCount ?? 0));
}
const results = await Promise.all(calls);
const failed = await Promise.allSettled([store.getMessages({ conversationId, limit: 0 }), store.state.get('k0')]);
client.close();
process.stdout.write(JSON.stringify({
  ids: results.filter((_, i) => i % 3 === 0),
  counts: results.filter((_, i) => i % 3 === 2),
  mixed: failed.map((r) => (r.status === 'fulfilled' ? r.value : r.reason.name)),
}));
