// The page's heading, in a file of its own: the hot-reload test edits this text.
export function Title() {
  return <h1 data-testid="title">Next chat</h1>;
}
