// The thread behind sync_rpc.mjs: makes each call over its own connection,
// posts the answer, then wakes the blocked caller.

import { parentPort, workerData } from 'node:worker_threads';
import { connect } from './store.mjs';

const { socketPath, flag, answers } = workerData;
const client = connect(socketPath);

parentPort.on('message', async ({ sequence, method, params }) => {
  let answer;
  try {
    answer = { sequence, result: await client.call(method, params) };
  } catch (error) {
    answer = { sequence, error: { name: error?.name ?? 'Error', message: error?.message ?? String(error) } };
  }
  answers.postMessage(answer);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
