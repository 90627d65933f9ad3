package replay

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestUnixNanoClamped(t *testing.T) {
	assert.Equal(t, int64(math.MaxInt64), unixNanoClamped(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)))
	assert.Equal(t, int64(math.MinInt64), unixNanoClamped(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
	now := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	assert.Equal(t, now.UnixNano(), unixNanoClamped(now))
}
