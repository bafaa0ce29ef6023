package contextpack

import (
	"fmt"
	"sync"

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
}

var encodings sync.Map // accountable.ContextTokenizer -> func() (*Tokens, error)

// Tokenizer returns the counter of name, made on its first use (an encoding holds its
// vocabulary, some tens of MB, for the life of the process).
func Tokenizer(name accountable.ContextTokenizer) (*Tokens, error) {
	load, _ := encodings.LoadOrStore(name, sync.OnceValues(func() (*Tokens, error) {
		enc, err := tiktoken.GetEncoding(string(name))
		if err != nil {
			return nil, fmt.Errorf("contextpack: tokenizer %s: %w", name, err)
		}
		return &Tokens{name: name, enc: enc}, nil
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
}

func newLineCounter(t *Tokens) *lineCounter {
	return &lineCounter{tokens: t, seen: make(map[string]int, 512)}
}

func (c *lineCounter) count(text string) int {
	n := 0
	for _, l := range Lines(text) {
		k, ok := c.seen[l]
		if !ok {
			k = c.tokens.Count(l)
			c.seen[l] = k
		}
		n += k
	}
	return n
}
