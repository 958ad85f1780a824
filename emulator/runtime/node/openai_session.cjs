// An OpenAI Agents JS `Session` over the store RPC: the Python OpenAISession
// keeps the items as the messages of conversation `sessionId` (metadata
// `agent_sdk_session`, `item_type`, `run_id`), so getMessages shows them.
'use strict';

class MakersOpenAISession {
  #call;

  constructor(sessionId, maxItems, call) {
    this.sessionId = sessionId;
    this.maxItems = maxItems;
    this.#call = (method, params = {}) => call(method, { sessionId, ...(maxItems === undefined ? {} : { maxItems }), ...params });
  }

  async getSessionId() { return this.sessionId; }

  getItems(limit) { return this.#call('getItems', limit === undefined ? {} : { limit }); }

  addItems(items) { return this.#call('addItems', { items }); }

  async popItem() {
    const item = await this.#call('popItem');
    return item === null ? undefined : item;
  }

  clearSession() { return this.#call('clearSession'); }
}

module.exports = function openaiSession(sessionId, maxItems, call) {
  return new MakersOpenAISession(sessionId, maxItems, call);
};
