// The Claude Agent SDK's `SessionStore` over the store RPC: the Python
// ClaudeSessionStore keeps the transcripts (same records whichever language
// wrote them). Keys are the SDK's `{ projectKey, sessionId, subpath? }`.
'use strict';

module.exports = function claudeSessionStore(call) {
  return {
    append: (key, entries) => call('append', { key, entries }),
    load: (key) => call('load', { key }),
    listSessions: (projectKey) => call('listSessions', { projectKey }),
    listSessionSummaries: (projectKey) => call('listSessionSummaries', { projectKey }),
    delete: (key) => call('delete', { key }),
    listSubkeys: (key) => call('listSubkeys', { key }),
  };
};
