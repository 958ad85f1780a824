// Every generic context.store method from Node, in the platform's call
// styles; prints what each returned (test_node_store.py checks it against
// what Python reads). Conversation "py-1" was written by Python first.
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId: 'node-1', runId: 'run_node' });
const out = {};

const first = await store.appendMessage({
  conversationId: 'node-1', role: 'user', content: 'hello', userId: 'u1', metadata: { source: 'web' },
});
const second = await store.appendMessage({ conversationId: 'node-1', role: 'assistant', content: [{ type: 'text', text: 'hi' }] });
const third = await store.appendMessage({ conversationId: 'node-1', role: 'tool', content: { result: 42 }, metadata: { tool_call_id: 'call_1' } });
out.ids = [first, second, third];
out.batch = await store.appendMessages({ conversationId: 'node-2', messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], userId: 'u1' });
out.pageDesc = await store.getMessages({ conversationId: 'node-1', limit: 2, order: 'desc' });
out.pageAfter = await store.getMessages({ conversationId: 'node-1', after: first });
out.pageBefore = await store.getMessages({ conversationId: 'node-1', before: third });
out.unknown = await store.getMessages({ conversationId: 'never-written' });
out.updated = await store.updateMessage({ conversationId: 'node-1', messageId: second, content: 'corrected', metadata: { edited: true } });
out.updatedBound = await store.updateMessage({ messageId: first, metadata: { source: 'cli' } });
await store.deleteMessage({ conversationId: 'node-1', messageId: third });
out.messages = await store.getMessages({ conversationId: 'node-1', limit: 50 });
out.meta = await store.getConversation({ conversationId: 'node-1' });
out.metaPositional = await store.getConversation('node-1');
out.missingMeta = await store.getConversation('never-written');
out.merged = await store.updateConversation({ conversationId: 'node-1', metadata: { title: 'Chat', tag: 'x' } });
out.mergedPositional = await store.updateConversation('node-1', { metadata: { tag: null, summary: 's' } });
const page1 = await store.listConversations({ userId: 'u1', limit: 1 });
const page2 = await store.listConversations({ userId: 'u1', limit: 1, after: page1.nextCursor });
out.userPages = [page1, page2];
await store.state.set('session', { step: 2, tags: ['a'], nothing: null });
out.state = await store.state.get('session');
out.stateMissing = await store.state.get('nope');
await store.state.set('gone', 1);
await store.state.delete('gone');
out.stateDeleted = await store.state.get('gone');
await store.clearMessages({ conversationId: 'node-2' });
out.cleared = await store.getConversation('node-2');
await store.appendMessage({ conversationId: 'node-3', role: 'user', content: 'bye' });
await store.deleteConversation('node-3');
out.deleted = await store.getConversation({ conversationId: 'node-3' });
out.binding = await store.claudeSessionBinding('node-1');
out.bindingAgain = await store.claudeSessionBinding({ conversationId: 'node-1' });
out.python = await store.getMessages({ conversationId: 'py-1' });
out.pythonState = await createContextStore(client, { conversationId: 'py-1' }).state.get('from-python');
out.openai = store.toOpenAIInput(out.messages);
out.all = await store.listConversations({ limit: 100, order: 'asc' });
client.close();
process.stdout.write(JSON.stringify(out));
