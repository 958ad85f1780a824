// The page's heading, in a module of its own: the hot-reload test edits this text.
export const title = 'Python chat';
