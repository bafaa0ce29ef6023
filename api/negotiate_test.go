package api

import (
	"context"
	"testing"
)

func TestNegotiate(t *testing.T) {
	svg := alternate("image/svg+xml", "a picture", func(context.Context, struct{}) ([]byte, error) { return nil, nil })
	alts := []Alternate{svg}
	for accept, wantSVG := range map[string]bool{
		"":                             false,
		"application/json":             false,
		"*/*":                          false,
		"image/svg+xml":                true,
		"IMAGE/SVG+XML; charset=utf-8": true,
		"image/*":                      true,
		"image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8": true,  // a browser's <img>
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8":  false, // a browser's page load
		"image/svg+xml, application/json":                                  false, // a tie goes to JSON
		"application/json;q=0.9, image/svg+xml":                            true,
		"image/svg+xml;q=0.5, application/json":                            false,
		"image/svg+xml;q=0.5, */*;q=0.4":                                   true,
		"image/*, */*":                                                     true, // the more specific range
		"image/svg+xml;q=0":                                                false,
		"image/svg+xml;q=0, */*":                                           false,
		"image/png":                                                        false, // matches nothing: JSON as before
		"image/svg+xml;q=abc":                                              false, // an invalid q skips the range
		"image/svg+xml;q=2":                                                false,
		"garbage, ,;,/":                                                    false,
	} {
		if got := negotiate(accept, alts) != nil; got != wantSVG {
			t.Errorf("Accept %q: SVG %v, want %v", accept, got, wantSVG)
		}
	}
	if negotiate("image/svg+xml", nil) != nil {
		t.Error("an operation without alternates answered one")
	}
}
