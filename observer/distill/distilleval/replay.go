package distilleval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// Answer is one recorded answer: what the endpoint says to the request of
// Case, whose utterance is Utterance.
type Answer struct {
	Case      string          `json:"case"`
	Utterance string          `json:"utterance"`
	Answer    json.RawMessage `json:"answer"` // the chat message's content: {"version":1,"operations":[…]}
}

// AnswersFile is the file of recorded answers in the corpus directory.
const AnswersFile = "answers-openai.jsonl"

// LoadAnswers reads a file of recorded answers, one Answer per line.
func LoadAnswers(path string) (map[string]Answer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read recorded answers: %w", err)
	}
	out := make(map[string]Answer)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var a Answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if a.Case == "" || len(a.Answer) == 0 {
			return nil, fmt.Errorf("%s:%d: a recorded answer needs case and answer", path, line)
		}
		if _, dup := out[a.Case]; dup {
			return nil, fmt.Errorf("%s:%d: case %q answered twice", path, line, a.Case)
		}
		out[a.Case] = a
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// ReplayServer is a fake OpenAI-compatible chat-completions endpoint on
// loopback that answers from recorded answers.
type ReplayServer struct {
	answers map[string]Answer
	ln      net.Listener
	srv     *http.Server
}

// NewReplayServer starts a ReplayServer on 127.0.0.1 (a free port).
// Point distill.OpenAIConfig.BaseURL at URL().
func NewReplayServer(answers map[string]Answer) (*ReplayServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the replay server: %w", err)
	}
	s := &ReplayServer{answers: answers, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	s.srv = &http.Server{Handler: mux}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the base URL to give the openai distiller.
func (s *ReplayServer) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server.
func (s *ReplayServer) Close() error { return s.srv.Close() }

func (s *ReplayServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		replayError(w, http.StatusBadRequest, "not a chat-completions request: "+err.Error())
		return
	}
	var turn string
	for _, m := range req.Messages {
		if m.Role == "user" {
			turn = m.Content
		}
	}
	a, err := s.lookup(turn)
	if err != nil {
		replayError(w, http.StatusNotFound, err.Error())
		return
	}
	var resp struct {
		Choices []map[string]any `json:"choices"`
	}
	resp.Choices = []map[string]any{{
		"index":         0,
		"message":       map[string]string{"role": "assistant", "content": string(a.Answer)},
		"finish_reason": "stop",
	}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// lookup finds the answer to a user turn: by its "Session:" line, checked
// against the messages the turn carries.
func (s *ReplayServer) lookup(turn string) (Answer, error) {
	session := ""
	texts := map[string]bool{}
	conversation := false
	for _, line := range strings.Split(turn, "\n") {
		if v, ok := strings.CutPrefix(line, "Session: "); ok && session == "" {
			session = strings.TrimSpace(v)
		}
		if strings.HasPrefix(line, "# Conversation") {
			conversation = true
			continue
		}
		var m struct {
			Text string `json:"text"`
		}
		if conversation && json.Unmarshal([]byte(line), &m) == nil {
			texts[m.Text] = true
		}
	}
	if session == "" {
		return Answer{}, errors.New("replay: the request names no session")
	}
	a, ok := s.answers[session]
	if !ok {
		return Answer{}, fmt.Errorf("replay: no recorded answer for case %q", session)
	}
	if a.Utterance != "" && !texts[a.Utterance] {
		return Answer{}, fmt.Errorf("replay: the request for case %q does not carry the recorded utterance: the corpus and the recorded answers disagree", session)
	}
	return a, nil
}

func replayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg}})
}
