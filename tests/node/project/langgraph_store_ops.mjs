// LangGraph.js BaseStore calls on context.store.langgraphStore; prints each
// result (test_node_langgraph.py compares them with the Python store's).
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, {}).langgraphStore;
const plain = (item) => item && { namespace: item.namespace, key: item.key, value: item.value, score: item.score ?? null, dated: item.createdAt instanceof Date && item.updatedAt >= item.createdAt };
await store.put(['users', 'u1', 'prefs'], 'theme', { color: 'dark', size: 3 });
await store.put(['users', 'u1', 'notes'], 'n1', { text: 'buy milk and bread' }, false);
await store.put(['users', 'u2', 'notes'], 'n1', { text: 'call mom' });
await store.put(['users', 'u2', 'notes'], 'gone', { text: 'x' });
await store.delete(['users', 'u2', 'notes'], 'gone');
const out = {
  get: plain(await store.get(['users', 'u1', 'prefs'], 'theme')),
  missing: await store.get(['users', 'u2', 'notes'], 'gone'),
  filtered: (await store.search(['users'], { filter: { size: { $gte: 3 } } })).map(plain),
  query: (await store.search(['users', 'u1'], { query: 'milk bread', limit: 5 })).map(plain),
  paged: (await store.search(['users'], { limit: 1, offset: 1 })).map(plain),
  namespaces: await store.listNamespaces({ prefix: ['users'], maxDepth: 2 }),
  suffixed: await store.listNamespaces({ suffix: ['notes'] }),
  bad: await store.put([], 'k', { a: 1 }).then(() => null, (e) => ({ name: e.name, message: e.message })),
};
client.close();
process.stdout.write(JSON.stringify(out));
