package domain

import "net/http"

// ErrorCode is the machine-readable `code` of an error answer of either API (decisions.md "Error
// codes"): a stable string an integrator can switch on, where the message may change. ErrorCodes
// is the one list; the OpenAPI documents' enums and /llms-full.txt are checked against it or
// written from it.
type ErrorCode string

// The codes, each answered with one HTTP status (Status).
const (
	CodeInvalidJSON              ErrorCode = "invalid_json"
	CodeInvalidRequest           ErrorCode = "invalid_request"
	CodeUnauthenticated          ErrorCode = "unauthenticated"
	CodeInsufficientScope        ErrorCode = "insufficient_scope"
	CodeForbidden                ErrorCode = "forbidden"
	CodeNotFound                 ErrorCode = "not_found"
	CodeMethodNotAllowed         ErrorCode = "method_not_allowed"
	CodeBodyTooLarge             ErrorCode = "body_too_large"
	CodeRateLimited              ErrorCode = "rate_limited"
	CodeIdempotencyKeyReused     ErrorCode = "idempotency_key_reused"
	CodeIdempotencyKeyInProgress ErrorCode = "idempotency_key_in_progress"
	CodeBookingConflict          ErrorCode = "booking_conflict"
	CodeActivationConflict       ErrorCode = "activation_conflict"
	CodeActivationExpired        ErrorCode = "activation_expired"
	CodeSubscriptionActive       ErrorCode = "subscription_active"
	CodeConflict                 ErrorCode = "conflict"
	CodeUnavailable              ErrorCode = "unavailable"
	CodeInternal                 ErrorCode = "internal"
)

// ErrorCodeInfo is one entry of ErrorCodes: a code, its status and what it means to a caller.
type ErrorCodeInfo struct {
	Code    ErrorCode
	Status  int
	Meaning string
}

// ErrorCodes is every code either API answers with, in the order the documents list them.
var ErrorCodes = []ErrorCodeInfo{
	{CodeInvalidJSON, http.StatusBadRequest, "the body is not a JSON object or not JSON, or is missing where the endpoint needs one (a body whose members are all optional may be left out: {})"},
	{CodeInvalidRequest, http.StatusBadRequest, "a field's value or type, a query parameter or a header is not accepted; `param` names the field when one is at fault"},
	{CodeUnauthenticated, http.StatusUnauthorized, "the API key (or operator token) is missing, invalid or revoked"},
	{CodeInsufficientScope, http.StatusForbidden, "the API key lacks the scope the endpoint requires"},
	{CodeForbidden, http.StatusForbidden, "the resource belongs to another account"},
	{CodeNotFound, http.StatusNotFound, "no such resource, or no such path"},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, "the path exists but not with this method (`Allow` lists those it takes)"},
	{CodeBodyTooLarge, http.StatusRequestEntityTooLarge, "the body is over 256 KB"},
	{CodeRateLimited, http.StatusTooManyRequests, "a rate limit is reached; retry after `Retry-After` seconds"},
	{CodeIdempotencyKeyReused, http.StatusConflict, "the Idempotency-Key was used for another request (another method, path or body)"},
	{CodeIdempotencyKeyInProgress, http.StatusConflict, "the request of this Idempotency-Key is still being performed; retry it in a moment"},
	{CodeBookingConflict, http.StatusConflict, "the booking overlaps another booking of the calendar"},
	{CodeActivationConflict, http.StatusConflict, "the activation was completed already, with another `externalUserId`"},
	{CodeActivationExpired, http.StatusBadRequest, "the activation token has expired"},
	{CodeSubscriptionActive, http.StatusConflict, "a billing subscription of the person is still active: cancel it first (erasure)"},
	{CodeConflict, http.StatusConflict, "the request contradicts the current state (any other conflict)"},
	{CodeUnavailable, http.StatusServiceUnavailable, "the service cannot answer just now (its database is out of reach, or a saved change is not readable yet); retry after `Retry-After` seconds, with the same Idempotency-Key"},
	{CodeInternal, http.StatusInternalServerError, "a bug of the service; the message leaks nothing"},
}

// Status is the HTTP status a code is answered with, 500 for a code not in ErrorCodes.
func (c ErrorCode) Status() int {
	for _, info := range ErrorCodes {
		if info.Code == c {
			return info.Status
		}
	}
	return http.StatusInternalServerError
}

// DefaultErrorCode is the code of an error answered with only a status: the general code of
// that status, the one a more specific refusal would replace.
func DefaultErrorCode(status int) ErrorCode {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalidRequest
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return CodeBodyTooLarge
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusConflict:
		return CodeConflict
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	default:
		return CodeInternal
	}
}
