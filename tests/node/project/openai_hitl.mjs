// The platform's human-in-the-loop pattern for OpenAI Agents JS, one process
// per request: a tool that needs approval pauses the run; its RunState goes
// into context.store.state and the next request (another process) restores
// it, approves and finishes. Scripted model, no network.
// Usage: node openai_hitl.mjs <conversation id> start|approve
import { Agent, run, RunState, setTracingDisabled, tool, Usage } from '@openai/agents';
import { z } from 'zod';
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

setTracingDisabled(true);
const [conversationId, action] = process.argv.slice(2);
const RUN_STATE_KEY = 'openai.run-state';

class ScriptedModel {
  async getResponse(request) {
    const last = request.input.at(-1);
    if (last.type === 'function_call_result') {
      return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `done: ${last.output.text}` }] }] };
    }
    return { usage: new Usage(), output: [{ type: 'function_call', callId: 'call_order', name: 'submit_order', arguments: '{"order":"2 coffees"}', status: 'completed' }] };
  }

  async *getStreamedResponse() {
    throw new Error('not used');
  }
}

const submitOrder = tool({
  name: 'submit_order',
  description: 'Submit an order.',
  parameters: z.object({ order: z.string() }),
  needsApproval: true,
  execute: async ({ order }) => `order-submitted:${order}`,
});
const agent = new Agent({ name: 'Orders', instructions: 'Take orders.', tools: [submitOrder], model: new ScriptedModel() });
const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId, runId: `run_${process.pid}` });

let out;
if (action === 'start') {
  const result = await run(agent, 'order 2 coffees');
  const pending = result.state.getInterruptions();
  await store.state.set(RUN_STATE_KEY, result.state.toString());
  out = { status: 'awaiting_approval', tool: pending[0]?.name };
} else {
  const stored = await store.state.get(RUN_STATE_KEY);
  const state = await RunState.fromString(agent, stored);
  state.approve(state.getInterruptions()[0]);
  const result = await run(agent, state);
  await store.state.delete(RUN_STATE_KEY);
  out = { status: 'completed', output: result.finalOutput, left: await store.state.get(RUN_STATE_KEY) };
}
client.close();
process.stdout.write(JSON.stringify(out));
