// LangGraph.js `BaseStore` over the store RPC: `batch` sends the operations
// to the Python store (MakersLangGraphStore.abatch), whose items Python
// agents read too. The base class comes from the project's node_modules.
// `search` is the Python store's (the same filters, pages and scores); the
// Node store is given no embeddings of its own.
'use strict';

const PACKAGE = '@langchain/langgraph-checkpoint';
const classes = new WeakMap();

// Operations are told apart by their fields, as LangGraph.js's InMemoryStore does.
function wireOperation(op) {
  if ('key' in op && 'namespace' in op && !('value' in op)) {
    return { kind: 'get', namespace: op.namespace, key: op.key };
  }
  if ('namespacePrefix' in op) {
    return {
      kind: 'search', namespacePrefix: op.namespacePrefix, filter: op.filter ?? null,
      limit: op.limit ?? 10, offset: op.offset ?? 0, query: op.query ?? null,
    };
  }
  if ('value' in op) {
    return { kind: 'put', namespace: op.namespace, key: op.key, value: op.value, index: op.index ?? null };
  }
  if ('matchConditions' in op || 'maxDepth' in op || 'limit' in op) {
    return {
      kind: 'listNamespaces', matchConditions: op.matchConditions ?? [], maxDepth: op.maxDepth ?? null,
      limit: op.limit ?? 100, offset: op.offset ?? 0,
    };
  }
  return { kind: 'unknown' };
}

function item(wire) {
  const out = { ...wire, createdAt: new Date(wire.createdAt), updatedAt: new Date(wire.updatedAt) };
  return out;
}

function result(wire) {
  if (wire === null || wire === undefined) return wire ?? null;
  if (Array.isArray(wire)) return wire.map((entry) => (Array.isArray(entry) ? entry : item(entry)));
  return item(wire);
}

function storeClass(BaseStore) {
  class MakersLangGraphStore extends BaseStore {
    #call;

    constructor(call) {
      super();
      this.#call = call;
    }

    async batch(operations) {
      const found = await this.#call('batch', { ops: operations.map(wireOperation) });
      return found.map(result);
    }
  }
  return MakersLangGraphStore;
}

module.exports = function langgraphStore(requireFramework, call) {
  const { BaseStore } = requireFramework(PACKAGE, { via: '@langchain/langgraph' });
  if (!classes.has(BaseStore)) classes.set(BaseStore, storeClass(BaseStore));
  const Store = classes.get(BaseStore);
  return new Store(call);
};
