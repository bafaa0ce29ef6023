package accountable

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestValueRulesAreCheckFields checks that a parameter's rules, built once (RulesOfField),
// say of each value what CheckFields says of a struct holding it in a field with the same
// tags (what the API checked per request before).
func TestValueRulesAreCheckFields(t *testing.T) {
	type params struct {
		ID       string      `json:"-" path:"id" format:"uuid"`
		Limit    *int        `json:"-" query:"limit" minimum:"1" maximum:"1000"`
		Name     *string     `json:"-" query:"name" minLength:"2" maxLength:"5" pattern:"^[a-z]+$"`
		Priority *Priority   `json:"-" query:"priority"`
		Status   TaskStatus  `json:"-" query:"status"`
		Since    *Time       `json:"-" query:"since"`
		Cost     *float64    `json:"-" query:"cost" minimum:"0.5"`
		Many     []string    `json:"-" query:"many" minItems:"1" maxItems:"2"`
		Tags     []Priority  `json:"-" query:"tags"`
		Plain    string      `json:"-" query:"plain"`
		Flag     bool        `json:"-" query:"flag"`
		Seq      *int64      `json:"-" query:"seq" minimum:"0"`
		Opaque   interface{} `json:"-" query:"opaque"`
	}
	strs := []string{"", "a", "ab", "abc", "abcdef", "AB", "é", "ab\x00", "0190c0de-0000-7000-8000-000000000000",
		"0190C0DE-0000-7000-8000-00000000000Z", "high", "medium", "todo", "completed", "soon"}
	rng := rand.New(rand.NewPCG(30, 2))
	typ := reflect.TypeFor[params]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		rules := RulesOfField(f)
		elem := f.Type
		if elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		probe := reflect.StructOf([]reflect.StructField{{Name: "V", Type: elem, Tag: reflect.StructTag(`json:"v" ` + string(f.Tag))}})
		for range 200 {
			v := reflect.New(elem).Elem()
			switch elem.Kind() {
			case reflect.String:
				v.SetString(strs[rng.IntN(len(strs))])
			case reflect.Int, reflect.Int64:
				v.SetInt(rng.Int64N(2004) - 2)
			case reflect.Float64:
				v.SetFloat(rng.Float64() * 2)
			case reflect.Bool:
				v.SetBool(rng.IntN(2) == 0)
			case reflect.Slice:
				n := rng.IntN(4)
				s := reflect.MakeSlice(elem, n, n)
				for j := range n {
					s.Index(j).SetString(strs[rng.IntN(len(strs))])
				}
				v.Set(s)
			case reflect.Struct:
				v.Set(reflect.ValueOf(TimeOf(Now())))
			}
			p := reflect.New(probe).Elem()
			p.Field(0).Set(v)
			want := ""
			if is := CheckFields(p.Addr().Interface()); len(is) > 0 {
				want = is[0].Message
			}
			if got := rules.Check(v); got != want {
				t.Fatalf("%s = %#v: %q, CheckFields says %q", f.Name, v.Interface(), got, want)
			}
		}
	}
}

// letter is an enumeration whose values are listed as its own type and as another's, not
// as plain strings (EnumStrings's).
type letter string

type otherLetter string

func (letter) Enum() []any { return []any{letter("a"), otherLetter("b"), "c", 4} }

// TestEnumHasIsEnumContains checks that the check of a value against its type's values
// read once (enumHas) is the check against a fresh Enum call (enumContains).
func TestEnumHasIsEnumContains(t *testing.T) {
	for _, v := range []any{letter("a"), letter("b"), letter("c"), letter("d"), letter(""), Priority("high"), Priority("soon"),
		TaskStatus("todo"), TaskStatus("")} {
		rv := reflect.ValueOf(v)
		if got, want := enumHas(rv), enumContains(v.(Enumerated).Enum(), v); got != want {
			t.Errorf("%#v: %v, enumContains says %v", v, got, want)
		}
	}
}
