// `npm test`: tokenizes every examples/*.audit with VS Code's own TextMate engine
// (vscode-textmate over vscode-oniguruma) and fails when a non-blank token has no
// scope of its own or an invalid.illegal scope. The Python test suite checks the
// same with babi's engine; this is the cross-check against VS Code itself.
'use strict';

const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const grammarPath = path.join(__dirname, '..', 'syntaxes', 'audit.tmLanguage.json');
const examples = path.join(__dirname, '..', '..', '..', 'examples');
const files = process.argv.length > 2 ? process.argv.slice(2)
  : fs.readdirSync(examples).filter((f) => f.endsWith('.audit')).map((f) => path.join(examples, f));

const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
const onigLib = oniguruma.loadWASM(wasm).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (s) => new oniguruma.OnigString(s),
}));
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async (scope) => (scope === 'source.audit'
    ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath) : null),
});

registry.loadGrammar('source.audit').then((grammar) => {
  let bad = 0;
  let tokens = 0;
  for (const file of files) {
    let rule = vsctm.INITIAL;
    fs.readFileSync(file, 'utf8').split('\n').forEach((line, n) => {
      const result = grammar.tokenizeLine(line, rule);
      for (const t of result.tokens) {
        const text = line.slice(t.startIndex, t.endIndex);
        tokens += 1;
        if (text.trim() && (t.scopes.length < 2 || t.scopes.some((s) => s.startsWith('invalid')))) {
          bad += 1;
          console.log(`${file}:${n + 1}: ${JSON.stringify(text)} ${t.scopes.join(' ')}`);
        }
      }
      rule = result.ruleStack;
    });
  }
  console.log(`${files.length} file(s), ${tokens} tokens, ${bad} without a scope or invalid`);
  process.exit(bad ? 1 : 0);
});
