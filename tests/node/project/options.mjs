// Option objects written as JavaScript callers write them (test_node_store.py):
// keys a method does not take, `userId` on the calls that do not use it, and
// `messageId` chosen by the caller (argv[2] === 'messageId').
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId: 'opts', runId: 'run_opts' });
const out = {};
if (process.argv[2] === 'messageId') {
  out.single = await store.appendMessage({ role: 'user', content: 'q', messageId: 'client-q-1' });
  out.batch = await store.appendMessages({
    messages: [{ role: 'assistant', content: 'a', messageId: 'client-a-1' }, { role: 'user', content: 'b' }],
  });
  out.listed = (await store.getMessages({ limit: 10 })).map((m) => m.messageId);
} else {
  // the same unknown key twice: one warning
  out.ids = [
    await store.appendMessage({ role: 'user', content: 'one', userId: 'u-7', traceLabel: 'x' }),
    await store.appendMessage({ role: 'user', content: 'two', traceLabel: 'y' }),
  ];
  out.page = (await store.getMessages({ limit: 10, userId: 'u-7', includeDrafts: true }))
    .map((m) => m.content);
  out.batch = await store.appendMessages({
    conversationId: 'opts-b', messages: [{ role: 'user', content: 'b', draft: true }] });
  await store.clearMessages({ conversationId: 'opts-b', userId: 'u-7' });
  out.cleared = (await store.getConversation('opts-b')).messageCount;
  out.owned = (await store.listConversations({ userId: 'u-7' })).items.map((c) => c.conversationId);
  await store.deleteConversation({ conversationId: 'opts', userId: 'u-7' });
  out.deleted = await store.getConversation('opts');
}
client.close();
process.stdout.write(JSON.stringify(out));
