// Bad input from Node: each case's error name and message (test_node_store.py
// makes the same call from Python and expects the same text).
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId: 'c', runId: 'run_e' });
const unbound = createContextStore(client, {});
const cyclic = { a: 1 };
cyclic.self = cyclic;
let deep = 'end';
for (let i = 0; i < 150; i += 1) deep = [deep];

const cases = {
  limit0: () => store.getMessages({ conversationId: 'c', limit: 0 }),
  limit101: () => store.getMessages({ conversationId: 'c', limit: 101 }),
  limitText: () => store.getMessages({ conversationId: 'c', limit: '5' }),
  order: () => store.getMessages({ conversationId: 'c', order: 'up' }),
  bothCursors: () => store.getMessages({ conversationId: 'c', after: 'msg_0000000001_aaaa', before: 'msg_0000000002_aaaa' }),
  longId: () => store.getMessages({ conversationId: 'x'.repeat(257) }),
  emptyId: () => store.appendMessage({ conversationId: '', role: 'user', content: 'x' }),
  role: () => store.appendMessage({ conversationId: 'c', role: 'robot', content: 'x' }),
  noContent: () => store.appendMessage({ conversationId: 'c', role: 'user' }),
  contentTooBig: () => store.appendMessage({ conversationId: 'c', role: 'user', content: 'x'.repeat(50 * 1024 * 1024 + 1) }),
  contentInfinity: () => store.appendMessage({ conversationId: 'c', role: 'user', content: { x: Infinity } }),
  metadataFunction: () => store.appendMessage({ conversationId: 'c', role: 'user', content: 'x', metadata: { f() {} } }),
  metadataList: () => store.appendMessage({ conversationId: 'c', role: 'user', content: 'x', metadata: [1] }),
  loneSurrogate: () => store.appendMessage({ conversationId: 'c', role: 'user', content: 'a\ud800b' }),
  unknownMessage: () => store.updateMessage({ conversationId: 'c', messageId: 'msg_0000000009_ffffffffff', content: 'x' }),
  badMessageId: () => store.deleteMessage({ conversationId: 'c', messageId: 'nope' }),
  unknownConversation: () => store.updateConversation({ conversationId: 'nope', metadata: { a: 1 } }),
  stateNaN: () => store.state.set('k', NaN),
  stateCycle: () => store.state.set('k', cyclic),
  stateDeep: () => store.state.set('k', deep),
  stateBigInt: () => store.state.set('k', 10n),
  stateSymbol: () => store.state.set('k', { s: Symbol('x') }),
  stateEmptyKey: () => store.state.set('', 1),
  stateLongKey: () => store.state.get('k'.repeat(257)),
  stateNoValue: () => store.state.set('k'),
  stateUnbound: () => unbound.state.get('k'),
  userIdType: () => store.getMessages({ conversationId: 'c', userId: 5 }),
  sessionMaxItems: () => store.openaiSession('c', { maxItems: 0 }).getItems(),
  claudeKey: () => store.claudeSessionStore().load({ projectKey: 'p' }),
  noFramework: async () => createContextStore(client, { projectRoot: '/' }).langgraphCheckpointer,
};

const out = {};
for (const [name, run] of Object.entries(cases)) {
  try {
    await run();
    out[name] = null;
  } catch (error) {
    out[name] = { name: error.name, message: error.message, isError: error instanceof Error };
  }
}
client.close();
process.stdout.write(JSON.stringify(out));
