//! The words keeper-client prints: its command list and `help` lines (ClickHouse
//! `programs/keeper-client/Commands.h`, in the order of its command map, which is by name), and
//! the text of a failed request (`Coordination::Exception::fromPath`: `Coordination error:
//! <errorMessage(code)>, path <path>`, with the messages of ClickHouse's `errorMessage`).

use testkeeper_wire::ZkError;

/// Every command name, sorted (keeper-client's completion list, without the four-letter words).
pub const COMMANDS: [&str; 20] = [
    "cd",
    "cp",
    "create",
    "delete_stale_backups",
    "exists",
    "find_big_family",
    "find_super_nodes",
    "flwc",
    "get",
    "get_all_children_number",
    "get_direct_children_number",
    "get_stat",
    "help",
    "ls",
    "mv",
    "rm",
    "rmr",
    "set",
    "sync",
    "touch",
];

/// `help`'s lines, one per command, by name.
pub const HELP: [&str; 20] = [
    "cd [path] -- Changes the working path (default `.`)",
    "cp <src> <dest> -- Copies 'src' node to 'dest' path.",
    "create <path> <value> [mode] -- Creates new node with the set value",
    "delete_stale_backups -- Deletes ClickHouse nodes used for backups that are now inactive",
    "exists <path> -- Returns `1` if node exists, `0` otherwise",
    "find_big_family [path] [n] -- Returns the top n nodes with the biggest family in the subtree (default path = `.` and n = 10)",
    "find_super_nodes <threshold> [path] -- Finds nodes with number of children larger than some threshold for the given path (default `.`)",
    "flwc <command> -- Executes four-letter-word command",
    "get <path> -- Returns the node's value",
    "get_all_children_number [path] -- Get all numbers of children nodes under a specific path",
    "get_direct_children_number [path] -- Get numbers of direct children nodes under a specific path",
    "get_stat [path] -- Returns the node's stat (default `.`)",
    "help -- Prints this message",
    "ls [path] -- Lists the nodes for the given path (default: cwd)",
    "mv <src> <dest> -- Moves 'src' node to the 'dest' path.",
    "rm <path> [version] -- Removes the node only if version matches (default: -1)",
    "rmr <path> [limit] -- Recursively deletes path if the subtree size is smaller than the limit. Confirmation required (default limit = 100)",
    "set <path> <value> [version] -- Updates the node's value. Only updates if version matches (default: -1)",
    "sync <path> -- Synchronizes node between processes and leader",
    "touch <path> -- Creates new node with an empty string as value. Doesn't throw an exception if the node already exists",
];

/// ClickHouse's `Coordination::errorMessage` for a server error code.
pub fn error_message(e: ZkError) -> &'static str {
    match e {
        ZkError::SystemError => "System error",
        ZkError::RuntimeInconsistency => "Run time inconsistency",
        ZkError::DataInconsistency => "Data inconsistency",
        ZkError::ConnectionLoss => "Connection loss",
        ZkError::MarshallingError => "Marshalling error",
        ZkError::Unimplemented => "Unimplemented",
        ZkError::OperationTimeout => "Operation timeout",
        ZkError::BadArguments => "Bad arguments",
        ZkError::ApiError => "API error",
        ZkError::NoNode => "No node",
        ZkError::NoAuth => "Not authenticated",
        ZkError::BadVersion => "Bad version",
        ZkError::NoChildrenForEphemerals => "No children for ephemerals",
        ZkError::NodeExists => "Node exists",
        ZkError::NotEmpty => "Not empty",
        ZkError::SessionExpired => "Session expired",
        ZkError::InvalidCallback => "Invalid callback",
        ZkError::InvalidAcl => "Invalid ACL",
        ZkError::AuthFailed => "Authentication failed",
        ZkError::SessionMoved => "Session moved to another server, so operation is ignored",
        ZkError::NotReadOnly => "State-changing request is passed to read-only server",
        other => other.name(),
    }
}

/// A failed request on `path`, as keeper-client prints it.
pub fn coordination_error(e: ZkError, path: &str) -> String {
    format!("Coordination error: {}, path {path}", error_message(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_sorted_and_agree() {
        let mut sorted = COMMANDS;
        sorted.sort_unstable();
        assert_eq!(sorted, COMMANDS);
        for (name, line) in COMMANDS.iter().zip(HELP) {
            assert!(line.starts_with(&format!("{name} ")), "{line}");
        }
        assert_eq!(coordination_error(ZkError::NoNode, "/a"), "Coordination error: No node, path /a");
    }
}
