// Package cursors encodes and decodes the opaque cursors that list and stream reads hand
// out and clients send back: a position in the event stream (accountable.StreamPosition)
// and a position in a list read newest first (accountable.WorkCursor). A string this
// service did not make decodes to nothing.
package cursors

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/accountablework/accountable"
)

// EncodeStream returns the opaque cursor string of p.
func EncodeStream(p accountable.StreamPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte("e1." + strconv.FormatInt(p.Position, 10) + "." + strconv.FormatInt(p.Seq, 10)))
}

// ParseStream decodes a cursor made by EncodeStream.
func ParseStream(s string) (accountable.StreamPosition, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return accountable.StreamPosition{}, false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || parts[0] != "e1" {
		return accountable.StreamPosition{}, false
	}
	pos, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || seq < 0 {
		return accountable.StreamPosition{}, false
	}
	return accountable.StreamPosition{Position: pos, Seq: seq}, true
}

// EncodeWork returns the opaque cursor string of c.
func EncodeWork(c accountable.WorkCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "." + c.ID))
}

// ParseWork decodes a cursor made by EncodeWork.
func ParseWork(s string) (accountable.WorkCursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return accountable.WorkCursor{}, false
	}
	micros, id, ok := strings.Cut(string(raw), ".")
	if !ok || !accountable.ValidUUID(id) {
		return accountable.WorkCursor{}, false
	}
	us, err := strconv.ParseInt(micros, 10, 64)
	if err != nil {
		return accountable.WorkCursor{}, false
	}
	return accountable.WorkCursor{CreatedAt: time.UnixMicro(us).UTC(), ID: id}, true
}
