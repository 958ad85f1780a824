// One append past the 10,000 messages of a conversation: the store's quota error.
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, {});
let out;
try {
  await store.appendMessage({ conversationId: process.argv[2], role: 'user', content: 'one more' });
  out = null;
} catch (error) {
  out = { name: error.name, message: error.message };
}
client.close();
process.stdout.write(JSON.stringify(out));
