package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workload"
)

// The Workload diagnosis area: GET /doctor/workload (what the diagnosis takes and how it
// scores) and POST /doctor/workload (the diagnosis), both account-free and answered
// without the {data, meta} envelope. The rules live in the root package
// (workload.Diagnose); nothing is stored.
//
// Failures are not the error envelope but the specification's {error{code, message,
// issues}, ok:false, valid:false} (Operation.Failure), with the status of the catalogue:
// 400 for a body that is not JSON (invalid_json) or breaks the schema or its rules
// (validation_failed: missing members, unknown enumeration values, a wrong
// schema_version, members the schema does not have, bounds, inconsistent members), 413
// for a body over the size limit, 415 for a body not sent as JSON. Every refusal of a
// request is 400: a request is invalid for the schema or not, there is no 422 here.
// issues lists each problem with the JSON Pointer of the member and a stable code
// (workload.WorkloadIssue*); refusals that are not about members carry none.

const doctorArea = "Workload diagnosis"

// WorkloadFailure is the failure body of the workload diagnosis.
type WorkloadFailure struct {
	Error WorkloadFailureError `json:"error"`
	OK    bool                 `json:"ok" const:"false"`
	Valid bool                 `json:"valid" const:"false"`
}

// WorkloadFailureError is what went wrong: a catalogued code, a message and the issues.
type WorkloadFailureError struct {
	Code    string                   `json:"code" minLength:"1"`
	Message string                   `json:"message" minLength:"1"`
	Issues  []workload.WorkloadIssue `json:"issues" maxItems:"100" nullable:"false"`
}

func init() { servesOperations(130, (*Server).doctorOperations) }

// doctorOperations are the Workload diagnosis area.
func (s *Server) doctorOperations() []operation {
	failure := failureBody(workloadFailure)
	return []operation{
		op(Operation{ID: "getWorkloadDiagnosisInfo", Method: fiber.MethodGet, Path: "/doctor/workload", Area: doctorArea,
			Public: true, Bare: true, Failure: failure,
			Summary: "What the workload diagnosis takes and how it scores: schema version, enumerations, bounds, scoring rules.",
			Description: "Account-free. The scoring rules are the ones POST /doctor/workload applies, each with its id " +
				"(docs/workload.md lists the same rules)."}, s.getWorkloadDiagnosisInfo),
		op(Operation{ID: "diagnoseWorkload", Method: fiber.MethodPost, Path: "/doctor/workload", Area: doctorArea,
			Public: true, Pure: true, Bare: true, ClosedBody: true, Failure: failure,
			Summary: "Scores a workload across time, agents, systems, authority and accountability.",
			Description: "Account-free and deterministic: the same request always gives the same body; diagnosis_id is wdg_ " +
				"and the first 24 hex digits of the SHA-256 of the request's canonical JSON (RFC 8785). Nothing is stored and " +
				"the name and outcome are never repeated. Members the schema does not have are refused. Failures answer " +
				"{error{code, message, issues}, ok:false, valid:false}, not the error envelope."}, s.diagnoseWorkload),
	}
}

// getWorkloadDiagnosisInfo: GET /doctor/workload (account-free).
func (s *Server) getWorkloadDiagnosisInfo(c *call, _ *struct{}) (workload.WorkloadDiagnosisInfo, error) {
	info := workload.WorkloadInfo()
	info.Diagnose = "POST " + s.cfg.SiteURL + V1Root + "/doctor/workload"
	return info, nil
}

// diagnoseWorkload: POST /doctor/workload (account-free). The review URL of the approval
// handoff is made absolute under the service's site URL.
func (s *Server) diagnoseWorkload(c *call, in *workload.WorkloadRequest) (workload.WorkloadDiagnosis, error) {
	return workload.DiagnoseUnder(*in, s.cfg.SiteURL), nil
}

// workloadFailure is the failure body of e: its code and message, and its issues with
// codes. The issues of the rules come coded (workload.WorkloadIssue); those of a body
// that did not decode are coded here: a member the schema does not have, or a value of
// the wrong type; a body that is not JSON is one issue at the document ("").
func workloadFailure(e accountable.Error, _ int) WorkloadFailure {
	issues := []workload.WorkloadIssue{}
	switch is := e.Details["issues"].(type) {
	case []workload.WorkloadIssue:
		issues = append(issues, is...)
	case accountable.Issues:
		for _, i := range is {
			code := workload.WorkloadIssueInvalidType
			switch {
			case i.Message == msgUnknownMember:
				code = workload.WorkloadIssueUnknownMember
			case !strings.HasPrefix(i.Message, "must be") && i.Message != "has the wrong type":
				code = workload.WorkloadIssueInvalid
			}
			issues = append(issues, workload.WorkloadIssue{Path: i.Path, Code: code, Message: i.Message})
		}
	}
	if e.Code == accountable.ECodeInvalidJSON {
		issues = append(issues, workload.WorkloadIssue{Path: "", Code: workload.WorkloadIssueInvalidJSON, Message: e.Message})
	}
	if len(issues) > workload.WorkloadIssuesMax {
		issues = issues[:workload.WorkloadIssuesMax]
	}
	return WorkloadFailure{Error: WorkloadFailureError{Code: e.Code, Message: e.Message, Issues: issues}}
}
