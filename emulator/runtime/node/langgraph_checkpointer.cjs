// LangGraph.js `BaseCheckpointSaver` over the store RPC. The saver serializes
// with its own `serde` (LangGraph.js's JsonPlusSerializer) and sends the typed
// bytes; the Python checkpointer (MakersCheckpointSaver) stores them in the
// same records as Python checkpoints, so `deleteConversation` removes them and
// a Python agent reads them (see emulator/runtime/store_rpc/checkpoints.py).
// The base class comes from the project's node_modules, never bundled.
'use strict';

const PACKAGE = '@langchain/langgraph-checkpoint';
const classes = new WeakMap(); // base class -> the saver class built on it

function wireBytes([type, bytes]) {
  return [type, Buffer.from(bytes).toString('base64')];
}

// What a checkpointer reads of a RunnableConfig: the rest holds live objects.
function wireConfig(config) {
  const configurable = config?.configurable ?? {};
  const out = {};
  for (const key of ['thread_id', 'checkpoint_ns', 'checkpoint_id']) {
    if (configurable[key] !== undefined) out[key] = configurable[key];
  }
  return { configurable: out };
}

function saverClass({ BaseCheckpointSaver, TASKS, maxChannelVersion }) {
  class MakersCheckpointSaver extends BaseCheckpointSaver {
    #call;

    constructor(call, serde) {
      super(serde);
      this.#call = call;
    }

    async #load([type, base64]) {
      return this.serde.loadsTyped(type, Buffer.from(base64, 'base64'));
    }

    async #tuple(wire) {
      if (wire === null || wire === undefined) return undefined;
      const tuple = {
        config: wire.config,
        checkpoint: await this.#load(wire.checkpoint),
        metadata: await this.#load(wire.metadata),
        pendingWrites: await Promise.all(
          wire.pendingWrites.map(async ([taskId, channel, value]) => [taskId, channel, await this.#load(value)])),
      };
      if (wire.parentConfig) {
        tuple.parentConfig = wire.parentConfig;
        if (tuple.checkpoint.v < 4) await this.#migratePendingSends(tuple.checkpoint, wire.parentConfig);
      }
      return tuple;
    }

    // Checkpoints before format 4 kept pending sends as the parent's TASKS
    // writes; LangGraph.js's savers move them into channel_values on read.
    async #migratePendingSends(checkpoint, parentConfig) {
      const parent = await this.#call('getTuple', { config: wireConfig(parentConfig) });
      const sends = (parent?.pendingWrites ?? []).filter(([, channel]) => channel === TASKS);
      checkpoint.channel_values ??= {};
      checkpoint.channel_values[TASKS] = await Promise.all(sends.map(([, , value]) => this.#load(value)));
      checkpoint.channel_versions ??= {};
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] = versions.length ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }

    async getTuple(config) {
      if (config?.configurable?.thread_id === undefined) return undefined; // as LangGraph.js's savers answer
      return this.#tuple(await this.#call('getTuple', { config: wireConfig(config) }));
    }

    async *list(config, options = {}) {
      const { limit, before, filter } = options;
      const found = await this.#call('list', {
        config: config ? wireConfig(config) : null,
        before: before ? wireConfig(before) : null,
        filter: filter ?? null,
        limit: limit ?? null,
      });
      for (const wire of found) yield await this.#tuple(wire);
    }

    async put(config, checkpoint, metadata, newVersions) {
      // [type, base64, id]: the id is all the Python checkpointer reads of the
      // checkpoint, so it does not parse the payload to find it
      // (store_rpc/checkpoints.py, relayed)
      return this.#call('put', {
        config: wireConfig(config),
        checkpoint: [...wireBytes(await this.serde.dumpsTyped(checkpoint)), checkpoint.id],
        metadata: metadata ?? {},
        newVersions: newVersions ?? {},
      });
    }

    async putWrites(config, writes, taskId, taskPath = '') {
      const wire = await Promise.all(
        writes.map(async ([channel, value]) => [channel, wireBytes(await this.serde.dumpsTyped(value))]));
      await this.#call('putWrites', { config: wireConfig(config), writes: wire, taskId, taskPath });
    }

    async deleteThread(threadId) {
      await this.#call('deleteThread', { threadId });
    }

    async copyThread(sourceThreadId, targetThreadId) {
      await this.#call('copyThread', { sourceThreadId, targetThreadId });
    }

    async deleteForRuns(runIds) {
      await this.#call('deleteForRuns', { runIds });
    }

    async prune(threadIds, { strategy = 'keep_latest' } = {}) {
      await this.#call('prune', { threadIds, strategy });
    }
  }
  return MakersCheckpointSaver;
}

/** A saver whose calls go through `call(method, params)`. */
module.exports = function langgraphCheckpointer(requireFramework, call, serde) {
  const framework = requireFramework(PACKAGE, { via: '@langchain/langgraph' });
  const { BaseCheckpointSaver } = framework;
  if (!classes.has(BaseCheckpointSaver)) classes.set(BaseCheckpointSaver, saverClass(framework));
  const Saver = classes.get(BaseCheckpointSaver);
  return new Saver(call, serde);
};
