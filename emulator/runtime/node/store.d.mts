// Types of store.mjs for TypeScript's NodeNext resolution, which looks for
// store.d.mts beside store.mjs: the declarations are in store.d.ts.
export * from './store.js';
