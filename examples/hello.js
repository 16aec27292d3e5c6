// A program is the body of an async function: top-level await, and `return`
// gives the value. Run it with:
//   bin/run-js-server run --input '{"words": ["code", "mode", "gateway"]}' examples/hello.js
const words = (typeof input === 'object' && input && input.words) || ['hello', 'world'];

console.log('got', words.length, 'words:', words);

// Shape the data and return only what matters.
const counts = {};
for (const w of words) {
  for (const ch of w) counts[ch] = (counts[ch] || 0) + 1;
}
const top = Object.entries(counts).sort((a, b) => b[1] - a[1]).slice(0, 3);

// This run has no downstream servers yet, so any tool call is refused at
// once, without anything being sent; a program can tell:
try {
  await tools.issues.list_issues({});
} catch (e) {
  console.log(e instanceof ToolRefused ? 'refused as expected: ' + e.code : 'unexpected: ' + e);
}

return { words: words.length, mostCommonLetters: top };
