package receipt

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/accountablework/accountable/canonical"
)

// canonicalReceipt's two forms are canonical.JSON of the document and of the document
// without its integrity member, wherever that member sorts and whatever else there is.
func TestCanonicalReceiptCutsTheIntegrityMember(t *testing.T) {
	for _, text := range []string{
		`{}`, `{"integrity":{"a":1}}`, `{"integrity":1,"zeta":2}`, `{"alpha":[1,2],"integrity":"x"}`,
		`{"alpha":1,"integrity":{"content_hash":{"value":"ab"}},"zeta":{"integrity":3}}`, `{"alpha":1,"beta":{"integrity":2}}`,
		`{"\u20ac":1,"integrity":null,"\ud83d\ude00":2,"integrit":3,"integrityx":4}`,
	} {
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader([]byte(text)))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		content, whole, err := canonicalReceipt(doc, len(text))
		if err != nil {
			t.Fatal(err)
		}
		without := maps.Clone(doc)
		delete(without, "integrity")
		wantWhole, _ := canonical.JSON(doc)
		wantContent, _ := canonical.JSON(without)
		if !bytes.Equal(whole, wantWhole) || !bytes.Equal(content, wantContent) {
			t.Errorf("%s: content %s whole %s, want %s and %s", text, content, whole, wantContent, wantWhole)
		}
	}
}
