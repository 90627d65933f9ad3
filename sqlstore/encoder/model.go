package encoder

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"unsafe"
)

// Shapes of this graph (read from model.json; Load checks every weight's).
const (
	Dim       = 512 // output width
	embedDim  = 256 // piece embeddings, layer 0's attention width
	hidden    = 512
	ffnDim    = 1536
	heads     = 4
	MaxPieces = 128 // ClipToMaxLength: pieces past the 128th are dropped
	lnEpsilon = 1e-6
	l2Epsilon = 1e-12
)

// layer holds one transformer layer's weights; matrices [in][out] in
// panels (packPanels).
type layer struct {
	in         int // attention width: 256 (layer 0) or 512
	lnAScale   []float32
	lnABias    []float32
	wqkv, bqkv []float32 // [in][3·in]
	wo, bo     []float32 // [in][hidden]
	wres, bres []float32 // [in][hidden] residual projection (layer 0 only)
	qScale     float32
	lnFScale   []float32
	lnFBias    []float32
	w1, b1     []float32 // [hidden][ffnDim]
	w2, b2     []float32 // [ffnDim][hidden]
}

// Model is the loaded encoder: tokenizer and weights. It is immutable and
// safe for concurrent use; each goroutine encodes through its own Encoder.
type Model struct {
	Tok      *Tokenizer
	embed    []float32 // [8002][256]
	timing   []float32 // [128] inverse timescales
	layers   [2]layer
	wt, bt   []float32 // tanh layer [512][512]
	weightsB int       // bytes of float32 weights held
}

type manifest struct {
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
			Dtype string `json:"dtype"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

const (
	pre = "module_apply_default/Encoder_en/KonaTransformer/Encode/"
	ts  = pre + "TransformerStack/"
)

// Load reads the model from dir (what Install wrote). It does not verify
// the sums (Verify does); it checks every shape it uses.
func Load(dir string) (*Model, error) {
	mj, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, ErrNotInstalled
		}
		return nil, fmt.Errorf("load model: %w", err)
	}
	var man manifest
	if err := json.Unmarshal(mj, &man); err != nil {
		return nil, fmt.Errorf("load model: parse model.json: %w", err)
	}
	vb, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	tok, err := ParseVocab(vb)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	m := &Model{Tok: tok}
	type span struct {
		off, n int
		shape  []int
		dtype  string
	}
	spans := map[string]span{}
	total := 0
	var paths []string
	for _, g := range man.WeightsManifest {
		paths = append(paths, g.Paths...)
		for _, w := range g.Weights {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			spans[w.Name] = span{total, n, w.Shape, w.Dtype}
			total += n * 4 // float32 and int32 only in this graph
		}
	}
	// One buffer for every shard, read straight into float32 storage.
	buf := make([]float32, total/4)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*4)
	off := 0
	for _, p := range paths {
		f, err := os.Open(filepath.Join(dir, filepath.Base(p)))
		if err != nil {
			return nil, fmt.Errorf("load model: %w", err)
		}
		n, err := io.ReadFull(f, raw[off:])
		f.Close()
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("load model: read %s: %w", p, err)
		}
		off += n
	}
	if off != total {
		return nil, fmt.Errorf("load model: shards hold %d bytes, model.json names %d", off, total)
	}
	if !littleEndian() {
		for i := 0; i+4 <= len(raw); i += 4 {
			binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
		}
	}
	var missing error
	get := func(name string, shape ...int) []float32 {
		s, ok := spans[name]
		if !ok || s.dtype != "float32" || !slices.Equal(s.shape, shape) {
			if missing == nil {
				missing = fmt.Errorf("load model: weight %s: got %v %s, want %v float32", name, s.shape, s.dtype, shape)
			}
			return nil
		}
		m.weightsB += s.n * 4
		return buf[s.off/4 : s.off/4+s.n : s.off/4+s.n]
	}
	scalar := func(name string) float32 {
		v := get(name)
		if len(v) != 1 {
			return 0
		}
		return v[0]
	}
	m.embed = get("module/Embeddings_en", 8002, embedDim)
	m.timing = get(ts+"Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 1, embedDim/2)
	for i := range m.layers {
		L := &m.layers[i]
		in := embedDim
		if i == 1 {
			in = hidden
		}
		L.in = in
		p := fmt.Sprintf("%sLayer_%d/TransformerLayer/", pre, i)
		k := fmt.Sprintf("module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/", i)
		t := fmt.Sprintf("%sLayer_%d/TransformerLayer/", ts, i)
		L.lnAScale = get(p+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", in)
		L.lnABias = get(p+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", in)
		L.wqkv = get(k+"MultiheadAttention/qkv_transform_single/kernel/part_0", 1, 1, in, 3*in)
		L.bqkv = get(p+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*in)
		L.wo = get(k+"MultiheadAttention/output_transform_single/kernel/part_0", 1, 1, in, hidden)
		L.bo = get(p+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", hidden)
		if i == 0 {
			L.wres = get(p+"dense/kernel/ConcatPartitions/concat", in, hidden)
			L.bres = get(p+"dense/bias/ConcatPartitions/concat", hidden)
		}
		L.qScale = scalar(t + "MultiheadAttention/mul/y")
		L.lnFScale = get(p+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", hidden)
		L.lnFBias = get(p+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", hidden)
		L.w1 = get(t+"FFN/conv1/Tensordot/Reshape_1", hidden, ffnDim)
		L.b1 = get(p+"FFN/conv1/bias/ConcatPartitions/concat", ffnDim)
		L.w2 = get(t+"FFN/conv2/Tensordot/Reshape_1", ffnDim, hidden)
		L.b2 = get(p+"FFN/conv2/bias/ConcatPartitions/concat", hidden)
	}
	m.wt = get("module/Encoder_en/hidden_layers/tanh_layer_0/weights", hidden, Dim)
	m.bt = get("module/Encoder_en/hidden_layers/tanh_layer_0/bias", Dim)
	if missing != nil {
		return nil, missing
	}
	scratch := make([]float32, hidden*ffnDim) // the largest matrix
	for i := range m.layers {
		L := &m.layers[i]
		packPanels(L.wqkv, scratch, L.in, 3*L.in)
		packPanels(L.wo, scratch, L.in, hidden)
		if L.wres != nil {
			packPanels(L.wres, scratch, L.in, hidden)
		}
		packPanels(L.w1, scratch, hidden, ffnDim)
		packPanels(L.w2, scratch, ffnDim, hidden)
	}
	packPanels(m.wt, scratch, hidden, Dim)
	if tok.Len() > 8002 {
		return nil, fmt.Errorf("load model: vocab.json has %d pieces, the embedding table 8002", tok.Len())
	}
	return m, nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
