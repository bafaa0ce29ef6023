package pictures

import (
	"context"

	"github.com/accountablework/accountable"
)

// LayOut lays out m afresh, past the maps drawn (to check that the layout itself gives the
// same bytes).
func LayOut(ctx context.Context, m accountable.OperatingMap) ([]byte, error) {
	return renderDOT(ctx, OperatingMapDOT(m))
}

// Layouts is how many layouts OperatingMap has run.
func Layouts() int64 { return drawnMaps.layouts.Load() }
