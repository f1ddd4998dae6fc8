//! Provider payloads from a [`ModelView`]: OpenAI Chat Completions messages, OpenAI
//! Responses input items and Genkit messages. Deterministic: the same view renders to the
//! same bytes.
//!
//! Consecutive tool calls become one assistant (or model) message with several calls, as the
//! providers expect; each result follows as its own message or item.

use serde::Serialize;
use serde_json::Value;

use crate::view::{ModelItem, ModelView};

/// One OpenAI Chat Completions message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage<'a> {
    /// `{"role":"user","content":…}`
    User {
        /// The text.
        content: &'a str,
    },
    /// `{"role":"assistant","content":…,"tool_calls":[…]}`
    Assistant {
        /// The text; `null` for a message that only calls tools.
        content: Option<&'a str>,
        /// The calls, omitted when there are none.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    /// `{"role":"tool","tool_call_id":…,"content":…}`
    Tool {
        /// The call this answers.
        tool_call_id: &'a str,
        /// The output.
        content: &'a str,
    },
}

/// A function call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatToolCall<'a> {
    /// The call id.
    pub id: &'a str,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function and its arguments.
    pub function: ChatFunction<'a>,
}

/// The function of a [`ChatToolCall`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatFunction<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// The arguments as JSON text, as the API expects.
    pub arguments: String,
}

/// The view as OpenAI Chat Completions `messages`.
pub fn openai_chat<'v>(view: &'v ModelView<'_>) -> Vec<ChatMessage<'v>> {
    let mut out: Vec<ChatMessage<'v>> = Vec::with_capacity(view.items.len());
    for item in &view.items {
        match item {
            ModelItem::User(text) => out.push(ChatMessage::User { content: text }),
            ModelItem::Assistant(text) => out.push(ChatMessage::Assistant {
                content: Some(text),
                tool_calls: Vec::new(),
            }),
            ModelItem::ToolCall { id, name, input } => {
                let call = ChatToolCall {
                    id,
                    kind: "function",
                    function: ChatFunction {
                        name,
                        arguments: input.to_string(),
                    },
                };
                match out.last_mut() {
                    Some(ChatMessage::Assistant {
                        content: None,
                        tool_calls,
                    }) => tool_calls.push(call),
                    _ => out.push(ChatMessage::Assistant {
                        content: None,
                        tool_calls: vec![call],
                    }),
                }
            }
            ModelItem::ToolResult { id, output, .. } => out.push(ChatMessage::Tool {
                tool_call_id: id,
                content: output,
            }),
        }
    }
    out
}

/// One OpenAI Responses input item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseItem<'a> {
    /// `{"type":"message","role":…,"content":[{"type":"input_text"|"output_text","text":…}]}`
    Message {
        /// `"user"` or `"assistant"`.
        role: &'static str,
        /// One text part.
        content: [ResponseText<'a>; 1],
    },
    /// `{"type":"function_call","call_id":…,"name":…,"arguments":…}`
    FunctionCall {
        /// The call id.
        call_id: &'a str,
        /// The tool's name.
        name: &'a str,
        /// The arguments as JSON text.
        arguments: String,
    },
    /// `{"type":"function_call_output","call_id":…,"output":…}`
    FunctionCallOutput {
        /// The call this answers.
        call_id: &'a str,
        /// The output.
        output: &'a str,
    },
}

/// A text part of a Responses message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseText<'a> {
    /// `"input_text"` for user text, `"output_text"` for assistant text.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text.
    pub text: &'a str,
}

/// The view as OpenAI Responses `input` items.
pub fn openai_responses<'v>(view: &'v ModelView<'_>) -> Vec<ResponseItem<'v>> {
    view.items
        .iter()
        .map(|item| match item {
            ModelItem::User(text) => ResponseItem::Message {
                role: "user",
                content: [ResponseText {
                    kind: "input_text",
                    text,
                }],
            },
            ModelItem::Assistant(text) => ResponseItem::Message {
                role: "assistant",
                content: [ResponseText {
                    kind: "output_text",
                    text,
                }],
            },
            ModelItem::ToolCall { id, name, input } => ResponseItem::FunctionCall {
                call_id: id,
                name,
                arguments: input.to_string(),
            },
            ModelItem::ToolResult { id, output, .. } => ResponseItem::FunctionCallOutput {
                call_id: id,
                output,
            },
        })
        .collect()
}

/// One Genkit message: `{"role":"user"|"model"|"tool","content":[…]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenkitMessage<'a> {
    /// `"user"`, `"model"` or `"tool"`.
    pub role: &'static str,
    /// Its parts.
    pub content: Vec<GenkitPart<'a>>,
}

/// One part of a Genkit message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum GenkitPart<'a> {
    /// `{"text":…}`
    Text {
        /// The text.
        text: &'a str,
    },
    /// `{"toolRequest":{"ref":…,"name":…,"input":…}}`
    ToolRequest {
        /// The request.
        #[serde(rename = "toolRequest")]
        tool_request: GenkitTool<'a>,
    },
    /// `{"toolResponse":{"ref":…,"name":…,"output":…}}`
    ToolResponse {
        /// The response.
        #[serde(rename = "toolResponse")]
        tool_response: GenkitTool<'a>,
    },
}

/// A Genkit tool request or response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenkitTool<'a> {
    /// The call id.
    #[serde(rename = "ref")]
    pub reference: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The arguments (request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<&'a Value>,
    /// The output (response).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<&'a str>,
}

/// The view as Genkit `messages`.
pub fn genkit<'v>(view: &'v ModelView<'_>) -> Vec<GenkitMessage<'v>> {
    let mut out: Vec<GenkitMessage<'v>> = Vec::with_capacity(view.items.len());
    for item in &view.items {
        let (role, part) = match item {
            ModelItem::User(text) => ("user", GenkitPart::Text { text }),
            ModelItem::Assistant(text) => ("model", GenkitPart::Text { text }),
            ModelItem::ToolCall { id, name, input } => (
                "model",
                GenkitPart::ToolRequest {
                    tool_request: GenkitTool {
                        reference: id,
                        name,
                        input: Some(input),
                        output: None,
                    },
                },
            ),
            ModelItem::ToolResult { id, name, output } => (
                "tool",
                GenkitPart::ToolResponse {
                    tool_response: GenkitTool {
                        reference: id,
                        name,
                        input: None,
                        output: Some(output),
                    },
                },
            ),
        };
        // Calls of one step share a model message, and their responses a tool message.
        let joins = matches!(
            part,
            GenkitPart::ToolRequest { .. } | GenkitPart::ToolResponse { .. }
        ) && out.last().is_some_and(|last| {
            last.role == role
                && last
                    .content
                    .iter()
                    .all(|p| std::mem::discriminant(p) == std::mem::discriminant(&part))
        });
        match out.last_mut() {
            Some(last) if joins => last.content.push(part),
            _ => out.push(GenkitMessage {
                role,
                content: vec![part],
            }),
        }
    }
    out
}

/// Serializes a payload as pretty JSON (for logs of what was sent, and snapshots).
pub fn to_pretty_json<T: Serialize + ?Sized>(payload: &T) -> String {
    // Serializing these payload types cannot fail: every map key is a string.
    serde_json::to_string_pretty(payload)
        .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}
