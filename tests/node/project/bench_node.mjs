// The Node side of tests/bench/bench_node.py: contenders that run in Node, each
// timing its own rounds (so no pipe to Python is inside a figure), driven one
// command at a time over stdin/stdout by the Python benchmark, which
// alternates them with its own contenders and serves the store RPC meanwhile.
//
// Usage: node --expose-gc bench_node.mjs <store RPC socket> <work dir>
// Commands (one JSON line each; one JSON line answers, {"error"} on failure):
//   {"cmd": "settings"}                        versions and SQLite settings
//   {"cmd": "setup", "what": "...", ...}       untimed preparation
//   {"cmd": "round", "name": "...", "seconds", "minOps"}   -> {"opsPerSecond", "cpuPerCall", "calls"}
//   {"cmd": "profile", "name": "...", "calls"}  where one call's time goes in
//                                               Node (tests/bench/bench_node_profile.py)
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { uuid6 } from '@langchain/langgraph-checkpoint';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { connect, createContextStore, RpcClient } from '../../../emulator/runtime/node/store.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const [socketPath, workdir] = process.argv.slice(2);
const client = connect(socketPath);
// bound to a conversation and run as serve binds a request's context.store
// (every call below still names its conversation)
const store = createContextStore(client, { conversationId: 'bench-node', runId: 'run-bench', projectRoot: HERE });
const SYNC_NAMES = { 0: 'OFF', 1: 'NORMAL', 2: 'FULL', 3: 'EXTRA' };
const PER_CONVERSATION = 2_000; // below the 10,000-message quota, as the Python rows

let text = '';
let readConversation = '';
let raw = null; // better-sqlite3: the floor under appendMessage and getMessages
let rawSeq = 0;
let rawAppend = null;
let rawSelect = null;
let peer = null; // SqliteSaver
const threads = {}; // name -> Thread
const latest = {}; // 'ours' | 'peer' -> the config of the read thread

function settingsOf(db) {
  return `${String(db.pragma('journal_mode', { simple: true })).toUpperCase()}, `
    + `synchronous=${SYNC_NAMES[db.pragma('synchronous', { simple: true })]}`;
}

function version(name) {
  return createRequire(path.join(HERE, 'package.json'))(`${name}/package.json`).version;
}

// The same table and row as the Python raw floor (tests/bench/benchmark.py), one
// statement per message, each its own transaction (better-sqlite3 autocommits).
function openRaw(file) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE messages (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, '
    + 'message_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, '
    + 'metadata TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (conversation_id, seq))');
  rawAppend = db.prepare('INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)');
  rawSelect = db.prepare('SELECT message_id, role, content, metadata, created_at FROM messages '
    + 'WHERE conversation_id = ? ORDER BY seq LIMIT 50');
  return db;
}

function appendRaw(conversationId) {
  rawSeq += 1;
  rawAppend.run(conversationId, rawSeq, `msg_${String(rawSeq).padStart(10, '0')}`, 'user',
    JSON.stringify(text), null, Date.now());
}

// What getMessages answers, built from the rows: content and metadata are
// stored as JSON text, so the floor parses them as the store must.
function selectRaw(conversationId) {
  return rawSelect.all(conversationId).map((row) => {
    const message = { messageId: row.message_id, role: row.role, content: JSON.parse(row.content), createdAt: row.created_at };
    if (row.metadata !== null) message.metadata = JSON.parse(row.metadata);
    return message;
  });
}

function messages(turns) {
  const found = [];
  for (let turn = 0; turn < turns; turn++) {
    found.push(new HumanMessage(`Question ${turn}: what changed in the Q${(turn % 4) + 1} report?`));
    found.push(new AIMessage({
      content: `Answer ${turn}: revenue grew 4%, churn fell to 2.1%, headcount is flat.`,
      response_metadata: { model: 'claude-sonnet', stop_reason: 'end_turn' },
    }));
  }
  return found;
}

// Successive checkpoints of one thread, as the Pregel loop would put them:
// the checkpoint tests/bench/bench_langgraph.py puts from Python, in LangGraph.js's shape.
class Thread {
  constructor(saver, threadId) {
    this.saver = saver;
    this.config = { configurable: { thread_id: threadId, checkpoint_ns: '' } };
    this.step = 0;
    this.history = messages(3);
  }

  async put() {
    this.step += 1;
    const version = this.step;
    const checkpoint = {
      v: 4,
      id: uuid6(this.step),
      ts: new Date().toISOString(),
      channel_values: {
        messages: this.history,
        summary: 'The user reviews quarterly figures.',
        remaining_steps: 24,
        'branch:to:agent': null,
      },
      channel_versions: { messages: version, summary: 1, remaining_steps: version },
      versions_seen: { agent: { messages: version - 1 }, __input__: {} },
    };
    const metadata = { source: 'loop', step: this.step, parents: {}, run_id: 'run-0001' };
    const newVersions = { messages: version, remaining_steps: version };
    this.config = await this.saver.put(this.config, checkpoint, metadata, newVersions);
  }

  async addWrites() {
    await this.saver.putWrites(this.config, [['messages', messages(1)], ['branch:to:tools', null]], 'task-1', '~agent');
  }
}

function saverOf(name) {
  return name === 'ours' ? store.langgraphCheckpointer : peer;
}

async function listed(saver, config, limit) {
  let count = 0;
  for await (const tuple of saver.list(config, { limit })) {
    if (tuple.checkpoint.channel_values.messages.length !== 6) throw new Error('list read a wrong checkpoint');
    count += 1;
  }
  if (count !== limit) throw new Error(`list gave ${count} checkpoints, not ${limit}`);
}

let appendCalls = 0;
const operations = {
  noop: () => client.call('bench.noop', {}), // a method only tests/bench/bench_node_profile.py serves
  'append.node': () => store.appendMessage({
    conversationId: `node-append-${Math.floor(appendCalls++ / PER_CONVERSATION)}`, role: 'user', content: text,
  }),
  'append.raw': () => appendRaw('raw-append'),
  'read.node': async () => {
    const page = await store.getMessages({ conversationId: readConversation, limit: 50 });
    if (page.length !== 50) throw new Error(`getMessages gave ${page.length} messages`);
  },
  // the calls of the overhead table (bench_node.py, overhead): each the same
  // call as its Python row, on a conversation of its own
  'state.get.node': () => store.state.get('k'),
  'state.set.node': () => store.state.set('k', { step: appendCalls++, text: 'a small value' }),
  'read20.node': async () => {
    const page = await store.getMessages({ conversationId: readConversation, limit: 20 });
    if (page.length !== 20) throw new Error(`getMessages gave ${page.length} messages`);
  },
  'read.raw': () => {
    if (selectRaw('raw-read').length !== 50) throw new Error('the raw select gave too few rows');
  },
  'put.ours': () => threads['put-ours'].put(),
  'put.peer': () => threads['put-peer'].put(),
  'get.ours': async () => {
    if ((await saverOf('ours').getTuple(latest.ours)) === undefined) throw new Error('no checkpoint');
  },
  'get.peer': async () => {
    if ((await saverOf('peer').getTuple(latest.peer)) === undefined) throw new Error('no checkpoint');
  },
  'list.ours': () => listed(saverOf('ours'), latest.ours, 10),
  'list.peer': () => listed(saverOf('peer'), latest.peer, 10),
};

// ops/s of one round, and this process's CPU microseconds per call
async function timedRound(op, seconds, minOps) {
  let calls = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const deadline = start + seconds * 1000;
  for (;;) {
    await op();
    calls += 1;
    const now = performance.now();
    if (calls >= minOps && now >= deadline) {
      const { user, system } = process.cpuUsage(cpu);
      return { opsPerSecond: calls / ((now - start) / 1000), cpuPerCall: (user + system) / calls, calls };
    }
  }
}

// Microseconds per call of `name` (`calls` of them, one after another): wall
// time, this process's CPU time, and the parts spent in the store RPC
// client, measured by wrapping its
// two entry points: `call` (encodeRequest and the socket write, then the
// whole wait for the answer) and `_answer` (JSON.parse of one reply line).
async function profile(name, calls) {
  const op = operations[name];
  for (let i = 0; i < 50; i++) await op(); // warm-up
  const spent = { send: 0, rpc: 0, parse: 0, rpcCalls: 0 };
  const { call, _answer: answerLine } = RpcClient.prototype;
  let lastRequest = null;
  let lastReply = '';
  RpcClient.prototype.call = function timedCall(method, params) {
    const started = performance.now();
    const pending = call.call(this, method, params);
    spent.send += performance.now() - started;
    spent.rpcCalls += 1;
    lastRequest = [method, params];
    return pending.finally(() => { spent.rpc += performance.now() - started; });
  };
  RpcClient.prototype._answer = function timedAnswer(line) {
    const started = performance.now();
    answerLine.call(this, line);
    spent.parse += performance.now() - started;
    lastReply = line;
  };
  globalThis.gc?.();
  const cpu = process.cpuUsage();
  const started = performance.now();
  try {
    for (let i = 0; i < calls; i++) await op();
  } finally {
    Object.assign(RpcClient.prototype, { call, _answer: answerLine });
  }
  const total = performance.now() - started;
  const { user, system } = process.cpuUsage(cpu); // microseconds, this process
  const perCall = (ms) => (ms * 1000) / calls;
  const result = {
    total: perCall(total), send: perCall(spent.send), rpc: perCall(spent.rpc),
    parse: perCall(spent.parse), rpcCalls: spent.rpcCalls / calls, cpu: (user + system) / calls,
  };
  if (lastRequest !== null) { // the size of one request and one answer
    const [method, params] = lastRequest;
    const { encodeRequest } = await import('../../../emulator/runtime/node/store_client.mjs');
    const repeats = 2000;
    const encodeStarted = performance.now();
    for (let i = 0; i < repeats; i++) encodeRequest(i, method, params);
    result.encode = ((performance.now() - encodeStarted) * 1000) / repeats;
    result.requestBytes = Buffer.byteLength(encodeRequest(1, method, params));
    result.replyBytes = Buffer.byteLength(lastReply) + 1;
  }
  return result;
}

async function setup(command) {
  switch (command.what) {
    case 'messages': { // the raw floor's table, and the read conversation's rows
      text = command.text;
      readConversation = command.readConversation;
      raw = openRaw(path.join(workdir, 'node-raw.db'));
      raw.transaction(() => { for (let i = 0; i < command.readMessages; i++) appendRaw('raw-read'); })();
      return { raw: settingsOf(raw) };
    }
    case 'checkpoints': { // the savers, a thread each for put, and a read thread of `history` checkpoints
      // as shipped: setup() sets WAL and leaves synchronous to SQLite, which
      // better-sqlite3 builds with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1 (NORMAL
      // once the WAL is in use); read back below, after the writes
      peer = SqliteSaver.fromConnString(path.join(workdir, 'node-sqlitesaver.db'));
      peer.setup();
      for (const name of ['ours', 'peer']) {
        threads[`put-${name}`] = new Thread(saverOf(name), `put-${name}`);
        const reader = new Thread(saverOf(name), `get-${name}`);
        for (let i = 0; i < command.history; i++) await reader.put();
        await reader.addWrites();
        latest[name] = { configurable: { thread_id: `get-${name}`, checkpoint_ns: '' } };
      }
      return { peer: settingsOf(peer.db) };
    }
    default:
      throw new Error(`unknown setup ${command.what}`);
  }
}

async function answer(command) {
  switch (command.cmd) {
    case 'settings':
      return {
        node: process.version,
        betterSqlite3: version('better-sqlite3'),
        sqliteSaver: version('@langchain/langgraph-checkpoint-sqlite'),
        sqlite: new Database(':memory:').prepare('SELECT sqlite_version() AS v').get().v,
      };
    case 'setup':
      return setup(command);
    case 'round': {
      const op = operations[command.name];
      if (op === undefined) throw new Error(`unknown contender ${command.name}`);
      globalThis.gc?.(); // as the Python side collects before each round
      return timedRound(op, command.seconds, command.minOps);
    }
    case 'profile':
      if (operations[command.name] === undefined) throw new Error(`unknown contender ${command.name}`);
      return profile(command.name, command.calls);
    default:
      throw new Error(`unknown command ${command.cmd}`);
  }
}

// one command at a time: the next line is read only after this one answered
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  let reply;
  try {
    reply = await answer(JSON.parse(line));
  } catch (error) {
    reply = { error: `${error.name}: ${error.message}` };
  }
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}
client.close();
raw?.close();
peer?.db.close();
