// A request and an answer larger than one socket read (the client reads 256 KB
// at a time), with multi-byte characters and newlines inside the text, so a
// read boundary falls inside a line and, at some offset, inside a character;
// and several such calls in flight at once, their answers interleaved on the wire.
// Usage: node large_answer.mjs <conversation id>
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const [conversationId] = process.argv.slice(2);
const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId });
const piece = 'é€😀 line\nnext "quoted" \\ ';
const contents = [1, 2, 3].map((n) => `${n}:${piece.repeat(30_000 + n * 7)}`);
for (const content of contents) await store.appendMessage({ conversationId, role: 'user', content });
const pages = await Promise.all([0, 1, 2].map(() => store.getMessages({ conversationId, limit: 10 })));
const small = await store.state.get('missing');
client.close();
process.stdout.write(JSON.stringify({
  equal: pages.map((page) => page.length === 3 && page.every((m, i) => m.content === contents[i])),
  bytes: Buffer.byteLength(contents.join('')),
  small,
}));
