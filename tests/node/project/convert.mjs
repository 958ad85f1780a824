// toOpenAIInput / toAnthropicMessages (synchronous, in JS) on the messages
// given as JSON on stdin; test_node_store.py compares with Python's output.
import { toAnthropicMessages, toOpenAIInput } from '../../../emulator/runtime/node/store.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const messages = JSON.parse(input);
process.stdout.write(JSON.stringify({ openai: toOpenAIInput(messages), anthropic: toAnthropicMessages(messages) }));
