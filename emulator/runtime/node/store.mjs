// `context.store` for Node agents: the platform's Node API (camelCase, one
// object of arguments) as a thin client of the Python store over the store
// RPC socket, so Node and Python agents and the CLI share one store, its
// errors and its limits. Types: store.d.ts.
//
// The framework adapters load on first use from one CommonJS module each
// (so the getters the platform documents can stay synchronous), with the
// framework's base classes taken from the project's own node_modules.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { storeError } from './store_client.mjs';
import { toAnthropicMessages, toOpenAIInput } from './store_convert.mjs';

export {
  BackendError, connect, MemoryConflictError, MemoryCorruptError, MemoryNotFoundError,
  MemoryQuotaExceededError, MemoryValidationError, MissingExtraError, RpcClient, StoreError,
} from './store_client.mjs';
export { toAnthropicMessages, toOpenAIInput } from './store_convert.mjs';

const requireHere = createRequire(import.meta.url);

// The platform also documents `getConversation(id)`, `updateConversation(id,
// { metadata })`, `deleteConversation(id)`: a first argument that is not an
// object of arguments is the conversation id, and a second one adds the rest.
function argumentsOf(first, rest) {
  if (first !== null && typeof first === 'object' && !Array.isArray(first)) return { ...first };
  const args = first === undefined ? {} : { conversationId: first };
  return rest !== null && typeof rest === 'object' ? { ...rest, ...args } : args;
}

/** Resolves a framework package the way the project's own code would. */
export function projectRequire(projectRoot) {
  const fromProject = createRequire(path.join(projectRoot, 'package.json'));
  return (name, { via } = {}) => {
    let resolved;
    try {
      // the copy the framework itself uses, when it is installed beside it
      const viaPath = via ? path.dirname(fromProject.resolve(`${via}/package.json`)) : null;
      resolved = viaPath
        ? createRequire(path.join(viaPath, 'package.json')).resolve(name)
        : fromProject.resolve(name);
    } catch {
      try {
        resolved = fromProject.resolve(name);
      } catch {
        throw storeError('MissingExtraError',
          `${name} is not installed in ${projectRoot}; install it with: npm install ${name}`);
      }
    }
    return fromProject(resolved);
  };
}

class ContextStore {
  #client;
  #bind;
  #requireFramework;
  #adapters = {};

  constructor(client, { conversationId, runId, userId, projectRoot } = {}) {
    this.#client = client;
    this.#bind = {};
    if (conversationId !== undefined && conversationId !== null) this.#bind.conversationId = conversationId;
    if (runId !== undefined && runId !== null) this.#bind.runId = runId;
    this.conversationId = this.#bind.conversationId;
    this.runId = this.#bind.runId;
    this.userId = userId;
    this.#requireFramework = projectRequire(projectRoot ?? process.cwd());
    const call = (method, params) => this.#call(method, params);
    this.state = Object.freeze({
      get: (key) => call('state.get', { key }),
      // state.set(key) with no value is refused by the store ("value is required")
      set: (...args) => call('state.set', args.length >= 2 ? { key: args[0], value: args[1] } : { key: args[0] }),
      delete: (key) => call('state.delete', { key }),
    });
  }

  #call(method, params, bind = this.#bind) {
    return this.#client.call(method, Object.keys(bind).length ? { ...params, $bind: bind } : params);
  }

  appendMessage(args, more) { return this.#call('appendMessage', argumentsOf(args, more)); }
  appendMessages(args, more) { return this.#call('appendMessages', argumentsOf(args, more)); }
  getMessages(args, more) { return this.#call('getMessages', argumentsOf(args, more)); }
  updateMessage(args, more) { return this.#call('updateMessage', argumentsOf(args, more)); }
  deleteMessage(args, more) { return this.#call('deleteMessage', argumentsOf(args, more)); }
  clearMessages(args, more) { return this.#call('clearMessages', argumentsOf(args, more)); }
  getConversation(args, more) { return this.#call('getConversation', argumentsOf(args, more)); }
  updateConversation(args, more) { return this.#call('updateConversation', argumentsOf(args, more)); }
  deleteConversation(args, more) { return this.#call('deleteConversation', argumentsOf(args, more)); }
  claudeSessionBinding(args, more) { return this.#call('claudeSessionBinding', argumentsOf(args, more)); }
  listConversations(args = {}) {
    return this.#call('listConversations', args === null || typeof args !== 'object' ? { limit: args } : { ...args });
  }

  toOpenAIInput(messages) { return toOpenAIInput(messages); }
  toAnthropicMessages(messages) { return toAnthropicMessages(messages); }

  /** The Claude Agent SDK's `SessionStore` (`options.sessionStore`). */
  claudeSessionStore() {
    const make = requireHere('./claude_session_store.cjs');
    return make((method, params) => this.#call(`claude.sessionStore.${method}`, params));
  }

  /** An OpenAI Agents JS `Session` kept as conversation `sessionId`'s messages. */
  openaiSession(sessionId = this.conversationId, { maxItems } = {}) {
    const make = requireHere('./openai_session.cjs');
    // the items one session object saves share one run id (message metadata run_id)
    const bind = { ...this.#bind, runId: this.runId ?? `run_${randomUUID().replaceAll('-', '')}` };
    return make(sessionId, maxItems, (method, params) => this.#call(`openai.session.${method}`, params, bind));
  }

  /** LangGraph.js `BaseCheckpointSaver` (a property, as the platform documents it). */
  get langgraphCheckpointer() {
    this.#adapters.checkpointer ??= requireHere('./langgraph_checkpointer.cjs')(
      this.#requireFramework, (method, params) => this.#call(`langgraph.checkpointer.${method}`, params, {}));
    return this.#adapters.checkpointer;
  }

  /** LangGraph.js `BaseStore` (a property, as the platform documents it). */
  get langgraphStore() {
    this.#adapters.store ??= requireHere('./langgraph_store.cjs')(
      this.#requireFramework, (method, params) => this.#call(`langgraph.store.${method}`, params, {}));
    return this.#adapters.store;
  }
}

/** `context.store` for one request, bound to its conversation and run. */
export function createContextStore(client, options = {}) {
  return new ContextStore(client, options);
}
