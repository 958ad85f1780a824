// Types of `context.store` for Node agents (store.mjs): the platform's Node
// API, camelCase with one object of arguments (at run time a key a method does
// not take is ignored, with a warning in serve's log, as JavaScript ignores a
// property nobody reads; here it is a type error). Framework types are kept
// structural so that this file needs no npm package; the adapters satisfy
// LangGraph.js's BaseCheckpointSaver / BaseStore, OpenAI Agents JS's Session
// and the Claude Agent SDK's SessionStore.

export type Role = 'user' | 'assistant' | 'system' | 'tool';
export type Order = 'asc' | 'desc';

export interface Message {
  messageId: string;
  role: Role;
  content: any;
  createdAt: number;
  metadata?: Record<string, any>;
  updatedAt?: number;
}

export interface ConversationMeta {
  conversationId: string;
  createdAt: number;
  lastMessageAt: number;
  messageCount: number;
  metadata?: Record<string, any>;
}

export interface ListConversationsResult {
  items: ConversationMeta[];
  nextCursor?: string;
  previousCursor?: string;
}

/** Errors carry Python's class name in `name` and Python's message. */
export declare class StoreError extends Error {}
export declare class MemoryValidationError extends StoreError {}
export declare class MemoryQuotaExceededError extends StoreError {}
export declare class MemoryNotFoundError extends StoreError {}
export declare class MemoryConflictError extends StoreError {}
export declare class MemoryCorruptError extends StoreError {}
export declare class BackendError extends StoreError {}
export declare class MissingExtraError extends BackendError {}

export interface RpcClient {
  call(method: string, params?: Record<string, unknown>): Promise<any>;
  close(): void;
}

export declare function connect(socketPath: string): RpcClient;

export interface StateStore {
  get<T = any>(key: string): Promise<T | null>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface ClaudeSessionKey {
  projectKey: string;
  sessionId: string;
  subpath?: string;
}

export interface ClaudeSessionStoreEntry {
  type: string;
  uuid?: string;
  timestamp?: string;
  [key: string]: unknown;
}

/** The Claude Agent SDK's `SessionStore` (`options.sessionStore`). */
export interface ClaudeSessionStore {
  append(key: ClaudeSessionKey, entries: ClaudeSessionStoreEntry[]): Promise<void>;
  load(key: ClaudeSessionKey): Promise<ClaudeSessionStoreEntry[] | null>;
  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>>;
  listSessionSummaries(
    projectKey: string,
  ): Promise<Array<{ sessionId: string; mtime: number; data: Record<string, unknown> }>>;
  delete(key: ClaudeSessionKey): Promise<void>;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
}

/** OpenAI Agents JS `Session`: items kept as the conversation's messages. */
export interface OpenAISession {
  readonly sessionId: string;
  readonly maxItems?: number;
  getSessionId(): Promise<string>;
  getItems(limit?: number): Promise<any[]>;
  addItems(items: any[]): Promise<void>;
  popItem(): Promise<any | undefined>;
  clearSession(): Promise<void>;
}

/** A LangGraph.js `BaseCheckpointSaver` (from the project's @langchain/langgraph-checkpoint). */
export interface LangGraphCheckpointer {
  serde: any;
  toJSON(): string;
  get(config: any): Promise<any | undefined>;
  getNextVersion(current: any): any;
  getDeltaChannelHistory(options: { config: any; channels: string[] }): Promise<Record<string, any>>;
  getTuple(config: any): Promise<any | undefined>;
  list(config: any, options?: { limit?: number; before?: any; filter?: Record<string, any> }): AsyncGenerator<any>;
  put(config: any, checkpoint: any, metadata: any, newVersions: Record<string, number | string>): Promise<any>;
  putWrites(config: any, writes: Array<[string, unknown]>, taskId: string, taskPath?: string): Promise<void>;
  deleteThread(threadId: string): Promise<void>;
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void>;
  deleteForRuns(runIds: string[]): Promise<void>;
  prune(threadIds: string[], options?: { strategy?: 'keep_latest' | 'delete' }): Promise<void>;
  [member: string]: any;
}

/** A LangGraph.js `BaseStore` (from the project's @langchain/langgraph-checkpoint). */
export interface LangGraphStore {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  batch<Op extends any[]>(operations: Op): Promise<any>;
  get(namespace: string[], key: string): Promise<any | null>;
  put(namespace: string[], key: string, value: Record<string, any>, index?: false | string[]): Promise<void>;
  delete(namespace: string[], key: string): Promise<void>;
  search(namespacePrefix: string[], options?: { filter?: Record<string, any>; limit?: number; offset?: number; query?: string }): Promise<any[]>;
  listNamespaces(options?: { prefix?: string[]; suffix?: string[]; maxDepth?: number; limit?: number; offset?: number }): Promise<string[][]>;
  [member: string]: any;
}

type WithConversation<T> = T & { conversationId?: string };

export interface ContextStore {
  readonly conversationId?: string;
  readonly runId?: string;
  readonly userId?: string;
  readonly state: StateStore;

  /** `messageId`: the id the message gets (the store makes one when it is omitted). */
  appendMessage(args: WithConversation<{ role: Role; content: any; metadata?: Record<string, any>; userId?: string; messageId?: string }>): Promise<string>;
  appendMessages(args: WithConversation<{ messages: Array<{ role: Role; content: any; metadata?: Record<string, any>; messageId?: string }>; userId?: string }>): Promise<string[]>;
  /** `userId` is accepted and ignored: it means nothing here in the platform's store doc. */
  getMessages(args: WithConversation<{ limit?: number; order?: Order; after?: string; before?: string; userId?: string }>): Promise<Message[]>;
  getMessages(conversationId: string, options?: { limit?: number; order?: Order; after?: string; before?: string }): Promise<Message[]>;
  updateMessage(args: WithConversation<{ messageId: string; content?: any; metadata?: Record<string, any> | null }>): Promise<Message>;
  deleteMessage(args: WithConversation<{ messageId: string }>): Promise<void>;
  /** `userId` is accepted and ignored: it means nothing here in the platform's store doc. */
  clearMessages(args?: WithConversation<{ userId?: string }>): Promise<void>;
  clearMessages(conversationId: string): Promise<void>;
  getConversation(args?: WithConversation<{}>): Promise<ConversationMeta | null>;
  getConversation(conversationId: string): Promise<ConversationMeta | null>;
  listConversations(args?: { limit?: number; order?: Order; after?: string; before?: string; userId?: string }): Promise<ListConversationsResult>;
  updateConversation(args: WithConversation<{ metadata: Record<string, any> }>): Promise<ConversationMeta>;
  updateConversation(conversationId: string, args: { metadata: Record<string, any> }): Promise<ConversationMeta>;
  /** `userId` is accepted and ignored: it means nothing here in the platform's store doc. */
  deleteConversation(args?: WithConversation<{ userId?: string }>): Promise<void>;
  deleteConversation(conversationId: string): Promise<void>;
  toAnthropicMessages(messages: Array<Pick<Message, 'role' | 'content' | 'metadata'>>): Array<{ role: string; content: any }>;
  toOpenAIInput(messages: Array<Pick<Message, 'role' | 'content' | 'metadata'>>): Array<{ role: string; content: any; [field: string]: any }>;

  claudeSessionStore(): ClaudeSessionStore;
  claudeSessionBinding(conversationId?: string | WithConversation<{}>): Promise<string>;
  openaiSession(sessionId?: string, options?: { maxItems?: number }): OpenAISession;
  readonly langgraphCheckpointer: LangGraphCheckpointer;
  readonly langgraphStore: LangGraphStore;
}

export declare function createContextStore(
  client: RpcClient,
  options?: { conversationId?: string; runId?: string; userId?: string; projectRoot?: string },
): ContextStore;

export declare function toAnthropicMessages(messages: Array<Pick<Message, 'role' | 'content' | 'metadata'>>): Array<{ role: string; content: any }>;
export declare function toOpenAIInput(messages: Array<Pick<Message, 'role' | 'content' | 'metadata'>>): Array<{ role: string; content: any; [field: string]: any }>;
