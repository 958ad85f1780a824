// Synchronous calls to the store RPC server, for the platform's synchronous
// APIs (`context.utils.abortActiveRun(id)` returns its result, not a promise).
//
// A worker thread holds its own RPC connection; the caller posts it a call and
// blocks in Atomics.wait until the thread has put the answer on a MessagePort
// and notified, then takes it with receiveMessageOnPort. The main thread's
// event loop does not run meanwhile, as a synchronous call on the platform.

import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

const THREAD = new URL('./sync_rpc_thread.mjs', import.meta.url);

export class SyncRpc {
  constructor(socketPath) {
    this.socketPath = socketPath;
    this.thread = null;
    this.sequence = 0;
  }

  start() {
    const { port1, port2 } = new MessageChannel();
    this.flag = new Int32Array(new SharedArrayBuffer(4));
    this.answers = port1;
    this.thread = new Worker(THREAD, {
      workerData: { socketPath: this.socketPath, flag: this.flag, answers: port2 },
      transferList: [port2],
    });
    this.thread.unref();
    this.thread.on('error', (error) => console.error('the synchronous RPC thread failed:', error));
  }

  /** The result of `method(params)`; throws the RPC error (name and message kept). */
  call(method, params, timeoutMs) {
    if (this.thread === null) this.start();
    const sequence = ++this.sequence;
    const deadline = Date.now() + timeoutMs;
    Atomics.store(this.flag, 0, 0);
    this.thread.postMessage({ sequence, method, params });
    for (;;) {  // answers to earlier calls that timed out are dropped
      const received = receiveMessageOnPort(this.answers);
      if (received !== undefined && received.message.sequence === sequence) {
        return this.outcome(received.message);
      }
      if (received !== undefined) continue;
      const left = deadline - Date.now();
      if (left <= 0 || Atomics.wait(this.flag, 0, 0, left) === 'timed-out') {
        throw new Error(`${method}: no answer within ${timeoutMs / 1000} s`);
      }
      Atomics.store(this.flag, 0, 0);
    }
  }

  outcome({ result, error }) {
    if (error !== undefined) {
      const thrown = new Error(error.message);
      thrown.name = error.name;
      throw thrown;
    }
    return result;
  }
}
