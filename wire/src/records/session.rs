//! Session-level records: auth, whoAmI, and the error body used inside multi replies.

record! {
    /// Body of an auth packet (xid -4, op 100).
    pub struct AuthPacket { auth_type: i32 [i32], scheme: String [str], auth: Vec<u8> [buf] }
}
record! {
    /// One identity in a whoAmI reply.
    pub struct ClientInfo { auth_scheme: String [str], user: String [str] }
}
record! {
    /// Reply to whoAmI (107).
    pub struct WhoAmIResponse { client_info: Vec<ClientInfo> [vec] }
}
record! {
    /// Body of an error result inside a multi reply.
    pub struct ErrorResponse { err: i32 [i32] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jute::testing::check_round_trip;

    #[test]
    fn session_records_round_trip() {
        check_round_trip(&AuthPacket { auth_type: 0, scheme: "digest".into(), auth: b"u:p".to_vec() });
        check_round_trip(&WhoAmIResponse {
            client_info: vec![ClientInfo { auth_scheme: "ip".into(), user: "127.0.0.1".into() }],
        });
        check_round_trip(&ErrorResponse { err: -101 });
    }
}
