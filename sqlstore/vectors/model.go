package vectors

import (
	"errors"
	"fmt"
	"sync"

	"dshmem/sqlstore/encoder"
)

// Model is a loaded encoder with its pool of Encoders (each is 3 MB of
// buffers, and not safe for concurrent use).
type Model struct {
	m    *encoder.Model
	pool sync.Pool // *encoder.Encoder
}

// NewModel wraps m.
func NewModel(m *encoder.Model) *Model {
	return &Model{m: m}
}

// LoadInstalled loads the encoder `dshmem model install` put in its
// default folder, with verify checking its sums first (about 28 MB
// hashed; a one-shot read command skips it, Load still checks every
// shape). A model that is not installed is (nil, nil): recall then ranks
// by words alone, as it always has.
func LoadInstalled(verify bool) (*Model, error) {
	dir, err := encoder.DefaultDir()
	if err != nil {
		return nil, err
	}
	if verify {
		err = encoder.Verify(dir)
	}
	var m *encoder.Model
	if err == nil {
		m, err = encoder.Load(dir)
	}
	switch {
	case errors.Is(err, encoder.ErrNotInstalled):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("sentence encoder in %s: %w (dshmem model install puts it back; until then recall uses words alone)", dir, err)
	}
	return NewModel(m), nil
}

// Encoder returns the underlying model.
func (m *Model) Encoder() *encoder.Model { return m.m }

func (m *Model) get() *encoder.Encoder {
	if e, ok := m.pool.Get().(*encoder.Encoder); ok {
		return e
	}
	return m.m.NewEncoder()
}

func (m *Model) put(e *encoder.Encoder) { m.pool.Put(e) }

// encoders returns n Encoders for one Fill.
func (m *Model) encoders(n int) []*encoder.Encoder {
	out := make([]*encoder.Encoder, n)
	for i := range out {
		out[i] = m.m.NewEncoder()
	}
	return out
}
