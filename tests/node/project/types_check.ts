// Compiled with `tsc --noEmit --strict` by test_node_store.py: store.d.ts
// types the platform's calling styles (and the frameworks accept the adapters).
import { MemorySaver } from '@langchain/langgraph';
import type { BaseCheckpointSaver, BaseStore } from '@langchain/langgraph-checkpoint';
import type { Session } from '@openai/agents';
import {
  connect, createContextStore, MemoryValidationError,
  type ContextStore, type ConversationMeta, type Message,
} from '../../../emulator/runtime/node/store.mjs';

export async function platformStyles(conversationId: string): Promise<void> {
  const store: ContextStore = createContextStore(connect('/tmp/store.sock'), { conversationId, runId: 'run_1' });
  const id: string = await store.appendMessage({ conversationId, role: 'user', content: 'hi', userId: 'u', metadata: { a: 1 } });
  const messages: Message[] = await store.getMessages({ conversationId, limit: 50, order: 'asc', after: id });
  const older: Message[] = await store.getMessages(conversationId, { limit: 10 });
  await store.updateMessage({ messageId: messages[0].messageId, content: 'edited' });
  await store.deleteMessage({ conversationId, messageId: id });
  await store.clearMessages({ conversationId });
  const meta: ConversationMeta | null = await store.getConversation(conversationId);
  await store.updateConversation(conversationId, { metadata: { title: 't', tag: null } });
  await store.updateConversation({ conversationId, metadata: { title: 't' } });
  const { items, nextCursor } = await store.listConversations({ userId: 'u', limit: 20 });
  await store.deleteConversation(conversationId);
  // userId where templates pass it (accepted, no meaning there), messageId chosen by the caller
  await store.getMessages({ conversationId, limit: 5, userId: 'u' });
  await store.clearMessages({ conversationId, userId: 'u' });
  await store.deleteConversation({ conversationId, userId: 'u' });
  await store.appendMessage({ conversationId, role: 'assistant', content: 'a', messageId: 'm-1' });
  await store.appendMessages({ conversationId, messages: [{ role: 'user', content: 'b', messageId: 'm-2' }] });
  const input = store.toOpenAIInput(older);
  const anthropic = store.toAnthropicMessages(messages);
  const saved = await store.state.get<{ step: number }>('session');
  await store.state.set('session', { step: (saved?.step ?? 0) + 1 });
  await store.state.delete('session');
  const sessionId: string = await store.claudeSessionBinding(conversationId);
  const sessionStore = store.claudeSessionStore();
  await sessionStore.append({ projectKey: 'p', sessionId }, [{ type: 'user', uuid: 'u1' }]);
  const session: Session = store.openaiSession(conversationId, { maxItems: 100 });
  const checkpointer: BaseCheckpointSaver = store.langgraphCheckpointer;
  const lgStore: BaseStore = store.langgraphStore;
  const fallback: BaseCheckpointSaver = new MemorySaver();
  // @ts-expect-error: the platform's roles only (a type error, so the types are not `any`)
  await store.appendMessage({ conversationId, role: 'robot', content: 'x' });
  // @ts-expect-error: state.get answers a Promise
  const notAwaited: { step: number } | null = store.state.get('session');
  try {
    await store.getMessages({ conversationId, limit: 0 });
  } catch (error) {
    if (error instanceof MemoryValidationError) console.log(error.name, error.message);
  }
  console.log(notAwaited, meta?.messageCount, items.length, nextCursor, input, anthropic, session, checkpointer, lgStore, fallback);
}
