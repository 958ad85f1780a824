// One turn of a LangGraph.js agent (a scripted model) in its own process, as
// one instance of a Node agent: the conversation lives in
// context.store.langgraphCheckpointer, a per-user memory in langgraphStore.
// Usage: node langgraph_turn.mjs <conversation id> <message>
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const [conversationId, text] = process.argv.slice(2);
const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId, runId: `run_${Date.now()}` });

async function model(state, config) {
  const said = state.messages.filter((m) => HumanMessage.isInstance(m)).map((m) => m.content);
  const memory = (await config.store.get(['memories', conversationId], 'turns'))?.value ?? { turns: 0 };
  await config.store.put(['memories', conversationId], 'turns', { turns: memory.turns + 1 });
  return { messages: [new AIMessage(`I have heard: ${said.join(', ')}`)] };
}

const graph = new StateGraph(MessagesAnnotation)
  .addNode('model', model)
  .addEdge(START, 'model')
  .addEdge('model', END)
  .compile({ checkpointer: store.langgraphCheckpointer, store: store.langgraphStore });

const result = await graph.invoke(
  { messages: [new HumanMessage(text)] },
  { configurable: { thread_id: conversationId } },
);
const found = await store.langgraphStore.search(['memories']);
client.close();
process.stdout.write(JSON.stringify({
  reply: result.messages.at(-1).content,
  types: result.messages.map((m) => m.getType()),
  memories: found.map((item) => ({ key: item.key, value: item.value, dated: item.createdAt instanceof Date })),
}));
