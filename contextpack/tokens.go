package contextpack

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/accountablework/accountable"
)

// The vocabularies are read from the loader's embedded files, never downloaded: set once,
// before the first encoding is made.
func init() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) }

// Tokens counts a text's tokens in one BPE vocabulary.
type Tokens struct {
	name accountable.ContextTokenizer
	enc  *tiktoken.Tiktoken
	// lines remembers the counts of lines seen: capsules of a scope repeat most of their
	// lines from one turn to the next (and events, decisions and handoffs recur across
	// scopes), and the BPE is slow (tiktoken-go: some 250 tokens a millisecond).
	lines *lru.Cache[string, int]
}

// cachedLines bounds Tokens.lines (a line is some 60 bytes: a few MB).
const cachedLines = 1 << 16

var encodings sync.Map // accountable.ContextTokenizer -> func() (*Tokens, error)

// Tokenizer returns the counter of name, made on its first use (an encoding holds its
// vocabulary, some tens of MB, for the life of the process).
func Tokenizer(name accountable.ContextTokenizer) (*Tokens, error) {
	if load, ok := encodings.Load(name); ok { // every request: no closure made to be dropped
		return load.(func() (*Tokens, error))()
	}
	load, _ := encodings.LoadOrStore(name, sync.OnceValues(func() (*Tokens, error) {
		enc, err := tiktoken.GetEncoding(string(name))
		if err != nil {
			return nil, fmt.Errorf("contextpack: tokenizer %s: %w", name, err)
		}
		lines, _ := lru.New[string, int](cachedLines) // errors only for a size <= 0
		return &Tokens{name: name, enc: enc, lines: lines}, nil
	}))
	return load.(func() (*Tokens, error))()
}

// Name is the vocabulary's name.
func (t *Tokens) Name() accountable.ContextTokenizer { return t.name }

// Count is the number of tokens of text, read as ordinary text (a special token's
// spelling in the data is counted as the text it is).
func (t *Tokens) Count(text string) int { return len(t.enc.EncodeOrdinary(text)) }

// lineCounter counts a text's tokens line by line, remembering each line's count: the
// serialized text has no piece of the vocabularies' pre-tokenization that spans a line
// break (every line ends in "\n" or is the last, and none starts with one), so the sum is
// the whole text's count, and re-counting a text after a change costs only its changed
// lines (TestLineCountIsWholeCount checks the sum against the whole count).
type lineCounter struct {
	tokens *Tokens
	seen   map[string]int
	held   *int // the bytes of seen's keys
}

func (c *lineCounter) count(text []byte) int {
	n := 0
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		k, ok := c.seen[string(line)] // a lookup: no copy of the line
		if !ok {
			k = c.first(string(line))
		}
		n += k
	}
	return n
}

func (c *lineCounter) countString(text string) int {
	n := 0
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		k, ok := c.seen[line]
		if !ok {
			k = c.first(line)
		}
		n += k
	}
	return n
}

// first is the count of a line this counter has not seen.
func (c *lineCounter) first(line string) int {
	k, ok := c.tokens.lines.Get(line)
	if !ok {
		k = c.tokens.Count(line)
		c.tokens.lines.Add(line, k)
	}
	c.seen[line] = k
	*c.held += len(line)
	return k
}
