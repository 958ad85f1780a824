// One turn of a DeepAgents (JS) agent in its own process, on
// context.store.langgraphCheckpointer and langgraphStore as the platform's
// DeepAgents notes wire it, with a scripted chat model (no network) that
// answers with every user message it was given.
// Usage: node deepagents_turn.mjs <conversation id> <message>
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { createDeepAgent } from 'deepagents';
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

class ScriptedChatModel extends BaseChatModel {
  _llmType() { return 'scripted'; }

  bindTools() { return this; }

  async _generate(messages) {
    const heard = messages.filter((m) => HumanMessage.isInstance(m)).map((m) => m.text);
    const message = new AIMessage(`heard: ${heard.join(', ')}`);
    return { generations: [{ text: message.text, message }] };
  }
}

const [conversationId, text] = process.argv.slice(2);
const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId, runId: `run_${process.pid}` });
const agent = createDeepAgent({
  model: new ScriptedChatModel({}),
  systemPrompt: 'Be brief.',
  checkpointer: store.langgraphCheckpointer,
  store: store.langgraphStore,
});
const result = await agent.invoke(
  { messages: [{ role: 'user', content: text }] },
  { configurable: { thread_id: conversationId } },
);
client.close();
process.stdout.write(JSON.stringify({ reply: result.messages.at(-1).text, count: result.messages.length }));
