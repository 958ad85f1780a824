// One turn of an OpenAI Agents JS agent in its own process, with a scripted
// model (no network): it calls the `add` tool once, then answers with every
// user message it was given, which the session (context.store.openaiSession)
// must have kept from earlier turns. Usage: node openai_turn.mjs <id> <message>
import { Agent, run, setTracingDisabled, tool, Usage } from '@openai/agents';
import { z } from 'zod';
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const [conversationId, text] = process.argv.slice(2);
setTracingDisabled(true); // offline

class ScriptedModel {
  async getResponse(request) {
    const input = Array.isArray(request.input) ? request.input : [{ role: 'user', content: request.input }];
    const last = input.at(-1);
    if (last.type !== 'function_call_result') {
      return {
        usage: new Usage(),
        output: [{ type: 'function_call', callId: `call_${input.length}`, name: 'add', arguments: '{"a":1,"b":2}', status: 'completed' }],
      };
    }
    const heard = input.filter((item) => item.role === 'user').map((item) => (
      typeof item.content === 'string' ? item.content : item.content.map((part) => part.text).join('')));
    return {
      usage: new Usage(),
      output: [{
        type: 'message', role: 'assistant', status: 'completed', id: `msg_${input.length}`,
        content: [{ type: 'output_text', text: `sum ${last.output.text ?? last.output}; heard: ${heard.join(', ')}` }],
      }],
    };
  }

  async *getStreamedResponse() {
    throw new Error('not used');
  }
}

const add = tool({
  name: 'add',
  description: 'Add two numbers',
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => String(a + b),
});

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId, runId: `run_${process.pid}` });
const agent = new Agent({ name: 'Assistant', instructions: 'Be brief.', tools: [add], model: new ScriptedModel() });
const session = store.openaiSession(conversationId);
const result = await run(agent, text, { session });
const items = await session.getItems();
client.close();
process.stdout.write(JSON.stringify({ reply: result.finalOutput, items, sessionId: await session.getSessionId() }));
