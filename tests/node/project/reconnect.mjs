// A client whose server goes away and comes back: calls made while it is away
// reject with BackendError; the next call after it is back connects again.
// Talks to the test over stdin/stdout, one line per step.
import readline from 'node:readline';
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId: 'r' });
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const out = {};
await store.state.set('k', 1);
process.stdout.write('set\n');
await lines.next(); // the server has closed
const away = await Promise.allSettled([store.state.get('k'), store.state.get('k')]);
out.away = away.map((r) => (r.status === 'rejected' ? r.reason.name : 'fulfilled'));
process.stdout.write('failed\n');
await lines.next(); // the server is back
out.back = await Promise.all([store.state.get('k'), store.getConversation('r')]);
client.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
