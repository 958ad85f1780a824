// The Claude Agent SDK (TypeScript) on context.store.claudeSessionStore(), as
// the platform's Node templates use it: claudeSessionBinding maps any
// conversation id to a session UUID; getSessionInfo finds no transcript, the
// transcript is mirrored (as the SDK's subprocess would), and the SDK's own
// readers (getSessionInfo, listSessions, getSessionMessages, listSubagents)
// read it back from the store. The CLI binary is not needed for any of this.
// Usage: node claude_sessions.mjs <conversation id> [delete]
import {
  foldSessionSummary, getSessionInfo, getSessionMessages, listSessions, listSubagents,
} from '@anthropic-ai/claude-agent-sdk';
import { connect, createContextStore } from '../../../emulator/runtime/node/store.mjs';

const [conversationId, mode] = process.argv.slice(2);
const client = connect(process.env.MAKERS_STORE_RPC);
const store = createContextStore(client, { conversationId });
const sessionStore = store.claudeSessionStore();
const sessionId = await store.claudeSessionBinding(conversationId);
const dir = process.cwd();
if (mode === 'delete') {
  const projectKey = process.argv[4];
  await sessionStore.delete({ projectKey, sessionId });
  process.stdout.write(JSON.stringify({ afterDelete: await sessionStore.load({ projectKey, sessionId }) }));
  client.close();
  process.exit(0);
}

const seen = [];
const recording = { ...sessionStore, load: (key) => { seen.push(key); return sessionStore.load(key); } };
const before = await getSessionInfo(sessionId, { dir, sessionStore: recording });
const { projectKey } = seen[0];

const stamp = (n) => `2026-08-12T10:00:0${n}.000Z`;
const common = { sessionId, cwd: dir, isSidechain: false, userType: 'external', version: '2.1.0' };
const question = { ...common, type: 'user', uuid: 'u-1', parentUuid: null, timestamp: stamp(1), message: { role: 'user', content: 'plan a trip' } };
const answer = { ...common, type: 'assistant', uuid: 'a-1', parentUuid: 'u-1', timestamp: stamp(2), message: { role: 'assistant', content: [{ type: 'text', text: 'Where to?' }] } };
const batches = [[question, answer], [question], [{ type: 'custom-title', customTitle: 'Plan the trip', sessionId }]];
let folded;
for (const batch of batches) { // the second is a retried batch: uuids make it a no-op
  await sessionStore.append({ projectKey, sessionId }, batch);
  folded = foldSessionSummary(folded, { projectKey, sessionId }, batch, { mtime: 0 });
}
await sessionStore.append({ projectKey, sessionId, subpath: 'subagents/agent-1' }, [
  { ...common, isSidechain: true, agentId: '1', type: 'user', uuid: 's-1', parentUuid: null, timestamp: stamp(3), message: { role: 'user', content: 'look up flights' } },
]);

const info = await getSessionInfo(sessionId, { dir, sessionStore });
const listed = await listSessions({ dir, sessionStore });
const messages = await getSessionMessages(sessionId, { dir, sessionStore });
const out = {
  sessionId,
  projectKey,
  before: before ?? null,
  info: { sessionId: info?.sessionId, summary: info?.summary },
  listed: listed.map((s) => ({ sessionId: s.sessionId })),
  messages: messages.map((m) => (typeof m.message.content === 'string' ? m.message.content : m.message.content[0].text)),
  subagents: await listSubagents(sessionId, { dir, sessionStore }),
  subkeys: await sessionStore.listSubkeys({ projectKey, sessionId }),
  loaded: await sessionStore.load({ projectKey, sessionId }),
  summaries: (await sessionStore.listSessionSummaries(projectKey)).map((entry) => entry.data),
  folded: folded.data,
};
client.close();
process.stdout.write(JSON.stringify(out));
