package distill

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// systemPrompt is the openai distiller's instructions; the memory/ops
// event records the model, and this file is versioned with the code.
//
//go:embed prompt.md
var systemPrompt string

// Defaults of OpenAIConfig.
const (
	DefaultBaseURL     = "https://api.deepseek.com/v1"
	DefaultModel       = "deepseek-chat"
	DefaultTimeout     = 120 * time.Second // one attempt
	DefaultMaxAttempts = 5
	DefaultMinBackoff  = 1 * time.Second
	DefaultMaxBackoff  = 30 * time.Second
)

// Environment variables NewOpenAI reads the API key from, in this order.
const (
	EnvDeepSeekKey = "DEEPSEEK_API_KEY"
	EnvLLMKey      = "DSHMEM_LLM_API_KEY"
)

// maxResponseBytes caps the HTTP body read from the endpoint.
const maxResponseBytes = 8 << 20

// OpenAIConfig configures the openai distiller. The zero value works when
// a key is in the environment.
type OpenAIConfig struct {
	BaseURL     string        // default https://api.deepseek.com/v1; "/chat/completions" is appended
	Model       string        // default deepseek-chat
	APIKey      string        // default from $DEEPSEEK_API_KEY, else $DSHMEM_LLM_API_KEY
	Timeout     time.Duration // one attempt, default 120 s
	MaxAttempts int           // default 5
	MinBackoff  time.Duration // first wait, doubled each retry; default 1 s
	MaxBackoff  time.Duration // cap of every wait, Retry-After included; default 30 s
	HTTPClient  *http.Client  // default a client without its own timeout (Timeout applies)
}

// APIError is a non-2xx answer of the endpoint.
type APIError struct {
	Status     int
	Message    string        // the endpoint's error message, when it sent one
	RetryAfter time.Duration // from a Retry-After header, 0 if none
}

func (e *APIError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("distill: endpoint answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("distill: endpoint answered %d %s", e.Status, http.StatusText(e.Status))
}

// retryable reports whether another attempt may succeed: rate limits,
// server errors and request timeouts; not a bad key or a bad request.
func (e *APIError) retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}

// NewOpenAI returns a distiller that asks an OpenAI-compatible
// chat-completions endpoint (DeepSeek by default). It fails with
// ErrNoAPIKey when no key is configured.
func NewOpenAI(cfg OpenAIConfig) (Distiller, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvDeepSeekKey)
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvLLMKey)
	}
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, ErrNoAPIKey
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &openAIDistiller{cfg: cfg, sleep: sleepCtx}, nil
}

type openAIDistiller struct {
	cfg OpenAIConfig
	// sleep waits between attempts; tests record the waits instead.
	sleep func(ctx context.Context, d time.Duration) error
}

func (d *openAIDistiller) Name() string  { return "openai" }
func (d *openAIDistiller) Model() string { return d.cfg.Model }

// Distill sends the claimed range to the endpoint and parses the answer.
// Network errors, timeouts of one attempt, 408, 429 and 5xx are retried,
// up to MaxAttempts, waiting MinBackoff·2ⁿ (capped at MaxBackoff) or the
// Retry-After the endpoint asked for (same cap). A malformed answer is
// not retried: it is returned as ErrMalformedAnswer, and the caller's
// checkpoint retries later. The answer still has to pass Validate.
func (d *openAIDistiller) Distill(ctx context.Context, req Request) (Result, error) {
	body, err := d.requestBody(req)
	if err != nil {
		return Result{}, err
	}
	var last error
	for attempt := 1; attempt <= d.cfg.MaxAttempts; attempt++ {
		content, err := d.attempt(ctx, body)
		if err == nil {
			var res Result
			if res, err = ParseResult([]byte(content)); err == nil {
				return res, nil
			}
		}
		if errors.Is(err, ErrMalformedAnswer) {
			// Asked again, the model would answer alike: not retried.
			return Result{}, fmt.Errorf("distill with %s: %w", d.cfg.Model, err)
		}
		if ctx.Err() != nil {
			return Result{}, fmt.Errorf("distill with %s: %w", d.cfg.Model, ctx.Err())
		}
		last = err
		var apiErr *APIError
		wait := d.backoff(attempt)
		if errors.As(err, &apiErr) {
			if !apiErr.retryable() {
				return Result{}, fmt.Errorf("distill with %s: %w", d.cfg.Model, err)
			}
			if apiErr.RetryAfter > 0 {
				wait = min(max(apiErr.RetryAfter, d.cfg.MinBackoff), d.cfg.MaxBackoff)
			}
		}
		if attempt == d.cfg.MaxAttempts {
			break
		}
		if err := d.sleep(ctx, wait); err != nil {
			return Result{}, fmt.Errorf("distill with %s: wait to retry after %v: %w", d.cfg.Model, last, err)
		}
	}
	return Result{}, fmt.Errorf("distill with %s: gave up after %d attempts: %w", d.cfg.Model, d.cfg.MaxAttempts, last)
}

// backoff is the wait after the given failed attempt (1-based).
func (d *openAIDistiller) backoff(attempt int) time.Duration {
	w := d.cfg.MinBackoff
	for i := 1; i < attempt && w < d.cfg.MaxBackoff; i++ {
		w *= 2
	}
	return min(w, d.cfg.MaxBackoff)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string        `json:"model"`
	Messages       []chatMessage `json:"messages"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Temperature float64 `json:"temperature"`
	Stream      bool    `json:"stream"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func (d *openAIDistiller) requestBody(req Request) ([]byte, error) {
	var cr chatRequest
	cr.Model = d.cfg.Model
	cr.Messages = []chatMessage{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: renderInput(req)},
	}
	cr.ResponseFormat.Type = "json_object"
	b, err := json.Marshal(cr)
	if err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	return b, nil
}

// renderInput is the user turn of the chat: the claimed range and the
// related entries, one JSON object per line. It applies the input caps
// itself (CapInput, and capRelated on req.Related in the order given),
// whatever the caller passed.
func renderInput(req Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Stream: %s\nSession: %s\nClaimed seq range: %d–%d\n\n", req.Stream, req.Session, req.From, req.To)
	b.WriteString("# Existing entries\n")
	_, lines := capRelated(req.Related)
	for _, line := range lines {
		b.Write(line)
	}
	if len(lines) == 0 {
		b.WriteString("(none)\n")
	}
	b.WriteString("\n# Conversation (oldest first)\n")
	var msgs []Message
	for _, m := range req.Messages {
		if req.inRange(m) {
			msgs = append(msgs, m)
		}
	}
	for _, m := range CapInput(msgs, MaxInputChars) {
		b.Write(renderMessage(m))
	}
	return b.String()
}

// attempt makes one request and returns the answer's content.
func (d *openAIDistiller) attempt(ctx context.Context, body []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("Authorization", "Bearer "+d.cfg.APIKey)
	resp, err := d.cfg.HTTPClient.Do(hr)
	if err != nil {
		return "", fmt.Errorf("post %s/chat/completions: %w", d.cfg.BaseURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return "", &APIError{Status: resp.StatusCode, Message: errorMessage(raw), RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	if len(raw) > maxResponseBytes {
		return "", fmt.Errorf("%w: answer larger than %d bytes", ErrMalformedAnswer, maxResponseBytes)
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return "", &APIError{Status: http.StatusBadGateway, Message: "not a chat-completions response: " + err.Error()}
	}
	if len(cr.Choices) == 0 {
		return "", &APIError{Status: http.StatusBadGateway, Message: "chat-completions response without choices"}
	}
	return cr.Choices[0].Message.Content, nil
}

// errorMessage extracts {"error":{"message":…}} from an error body, or a
// short prefix of the body.
func errorMessage(raw []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(raw))
	return TruncateRunes(s, 200)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date
// (measured from now; only used to size a wait).
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
