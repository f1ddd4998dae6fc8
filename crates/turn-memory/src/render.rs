//! Provider payloads from a [`ModelView`]: OpenAI Chat Completions messages, OpenAI
//! Responses input items, Genkit messages, an Anthropic Messages request and a Gemini
//! `generateContent` request. Deterministic: the same view renders to the same bytes.
//!
//! Assistant text and the tool calls that follow it become one assistant (or model) message,
//! as the providers expect; results follow as tool messages (OpenAI Chat, one per result),
//! items (Responses), a `tool` message (Genkit) or one user turn (Anthropic, Gemini). The
//! system prompt is the first message where the API has a system role (OpenAI Chat,
//! Responses, Genkit) and a field apart where it has none (Anthropic `system`, Gemini
//! `systemInstruction`). Anthropic and Gemini need the roles to alternate: consecutive
//! content of one role is merged into one message, and empty texts, which both refuse, are
//! left out.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::view::{ModelItem, ModelView};

/// The system prompt of a view, unless it is empty.
fn system<'v>(view: &'v ModelView<'_>) -> Option<&'v str> {
    view.system.as_deref().filter(|s| !s.is_empty())
}

/// One OpenAI Chat Completions message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage<'a> {
    /// `{"role":"system","content":…}`
    System {
        /// The system prompt.
        content: &'a str,
    },
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
    let mut out: Vec<ChatMessage<'v>> = Vec::with_capacity(view.items.len() + 1);
    if let Some(content) = system(view) {
        out.push(ChatMessage::System { content });
    }
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
                // The calls of one step join its text (or the calls before them).
                match out.last_mut() {
                    Some(ChatMessage::Assistant { tool_calls, .. }) => tool_calls.push(call),
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
        /// `"system"`, `"user"` or `"assistant"`.
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

/// The view as OpenAI Responses `input` items, the system prompt first as a `system`
/// message.
pub fn openai_responses<'v>(view: &'v ModelView<'_>) -> Vec<ResponseItem<'v>> {
    let prompt = system(view).map(|text| ResponseItem::Message {
        role: "system",
        content: [ResponseText {
            kind: "input_text",
            text,
        }],
    });
    prompt
        .into_iter()
        .chain(view.items.iter().map(|item| match item {
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
        }))
        .collect()
}

/// One Genkit message: `{"role":"system"|"user"|"model"|"tool","content":[…]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenkitMessage<'a> {
    /// `"system"`, `"user"`, `"model"` or `"tool"`.
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

/// The view as Genkit `messages`, the system prompt first as a `system` message.
pub fn genkit<'v>(view: &'v ModelView<'_>) -> Vec<GenkitMessage<'v>> {
    let mut out: Vec<GenkitMessage<'v>> = Vec::with_capacity(view.items.len() + 1);
    if let Some(text) = system(view) {
        out.push(GenkitMessage {
            role: "system",
            content: vec![GenkitPart::Text { text }],
        });
    }
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
            ModelItem::ToolResult {
                id, name, output, ..
            } => (
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
        // The calls of one step join its text (or the calls before them) in a model message,
        // and their responses share a tool message.
        let joins = !matches!(part, GenkitPart::Text { .. })
            && out.last().is_some_and(|last| last.role == role);
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

/// An Anthropic Messages request without the model settings: `system` apart, then
/// `messages` that alternate between `user` and `assistant`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnthropicRequest<'a> {
    /// The system prompt, omitted when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<&'a str>,
    /// The messages.
    pub messages: Vec<AnthropicMessage<'a>>,
}

/// One Anthropic message: `{"role":"user"|"assistant","content":[…]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnthropicMessage<'a> {
    /// `"user"` or `"assistant"`.
    pub role: &'static str,
    /// Its content blocks; tool results come first in a user message.
    pub content: Vec<AnthropicBlock<'a>>,
}

/// One content block of an Anthropic message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AnthropicBlock<'a> {
    /// `{"type":"text","text":…}`
    Text {
        /// The text, never blank.
        text: &'a str,
    },
    /// `{"type":"tool_use","id":…,"name":…,"input":{…}}`
    ToolUse {
        /// The call id.
        id: &'a str,
        /// The tool's name.
        name: &'a str,
        /// The arguments, always an object (another value is wrapped as `{"value":…}`).
        input: Cow<'a, Value>,
    },
    /// `{"type":"tool_result","tool_use_id":…,"content":…,"is_error":true}`
    ToolResult {
        /// The call this answers.
        tool_use_id: &'a str,
        /// The output.
        content: &'a str,
        /// Whether the tool reported an error, omitted when it did not.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// The view as an Anthropic Messages request.
///
/// ```
/// use agent_memory_turns::{ModelItem, ModelView, render};
///
/// let view = ModelView::new(vec![
///     ModelItem::User("first".into()),
///     ModelItem::User("second".into()),
/// ])
/// .with_system("Be brief.");
/// let request = render::anthropic(&view);
/// assert_eq!(request.system, Some("Be brief."));
/// assert_eq!(request.messages.len(), 1, "two user messages in a row are merged");
/// ```
pub fn anthropic<'v>(view: &'v ModelView<'_>) -> AnthropicRequest<'v> {
    let mut messages: Vec<AnthropicMessage<'v>> = Vec::with_capacity(view.items.len());
    for item in &view.items {
        let (role, block) = match item {
            ModelItem::User(text) | ModelItem::Assistant(text) if text.trim().is_empty() => {
                continue;
            }
            ModelItem::User(text) => ("user", AnthropicBlock::Text { text }),
            ModelItem::Assistant(text) => ("assistant", AnthropicBlock::Text { text }),
            ModelItem::ToolCall { id, name, input } => (
                "assistant",
                AnthropicBlock::ToolUse {
                    id,
                    name,
                    input: as_object(input),
                },
            ),
            ModelItem::ToolResult {
                id,
                output,
                is_error,
                ..
            } => (
                "user",
                AnthropicBlock::ToolResult {
                    tool_use_id: id,
                    content: output,
                    is_error: *is_error,
                },
            ),
        };
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.push(block),
            _ => messages.push(AnthropicMessage {
                role,
                content: vec![block],
            }),
        }
    }
    AnthropicRequest {
        system: system(view),
        messages,
    }
}

/// A Gemini `generateContent` request without the generation settings: `systemInstruction`
/// apart, then `contents` that alternate between `user` and `model`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GeminiRequest<'a> {
    /// The system prompt, omitted when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<GeminiContent<'a>>,
    /// The conversation.
    pub contents: Vec<GeminiContent<'a>>,
}

/// One Gemini `Content`: `{"role":"user"|"model","parts":[…]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeminiContent<'a> {
    /// `"user"` or `"model"`; omitted for the system instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Its parts.
    pub parts: Vec<GeminiPart<'a>>,
}

/// One part of a Gemini content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum GeminiPart<'a> {
    /// `{"text":…}`, never empty.
    Text(&'a str),
    /// `{"functionCall":{"id":…,"name":…,"args":{…}}}`
    FunctionCall(GeminiFunctionCall<'a>),
    /// `{"functionResponse":{"id":…,"name":…,"response":{…}}}`
    FunctionResponse(GeminiFunctionResponse<'a>),
}

/// A call the model made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeminiFunctionCall<'a> {
    /// The call id.
    pub id: &'a str,
    /// The function's name.
    pub name: &'a str,
    /// The arguments, always an object (another value is wrapped as `{"value":…}`).
    pub args: Cow<'a, Value>,
}

/// The result of a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeminiFunctionResponse<'a> {
    /// The call this answers.
    pub id: &'a str,
    /// The function's name.
    pub name: &'a str,
    /// The output as an object: the output itself when it is a JSON object, else
    /// `{"output":…}` (`{"error":…}` when the tool reported an error), as the API reads it.
    pub response: Value,
}

/// The view as a Gemini `generateContent` request.
pub fn gemini<'v>(view: &'v ModelView<'_>) -> GeminiRequest<'v> {
    let mut contents: Vec<GeminiContent<'v>> = Vec::with_capacity(view.items.len());
    for item in &view.items {
        let (role, part) = match item {
            ModelItem::User(text) | ModelItem::Assistant(text) if text.is_empty() => continue,
            ModelItem::User(text) => ("user", GeminiPart::Text(text)),
            ModelItem::Assistant(text) => ("model", GeminiPart::Text(text)),
            ModelItem::ToolCall { id, name, input } => (
                "model",
                GeminiPart::FunctionCall(GeminiFunctionCall {
                    id,
                    name,
                    args: as_object(input),
                }),
            ),
            ModelItem::ToolResult {
                id,
                name,
                output,
                is_error,
            } => (
                "user",
                GeminiPart::FunctionResponse(GeminiFunctionResponse {
                    id,
                    name,
                    response: response_object(output, *is_error),
                }),
            ),
        };
        match contents.last_mut() {
            Some(last) if last.role == Some(role) => last.parts.push(part),
            _ => contents.push(GeminiContent {
                role: Some(role),
                parts: vec![part],
            }),
        }
    }
    GeminiRequest {
        system_instruction: system(view).map(|text| GeminiContent {
            role: None,
            parts: vec![GeminiPart::Text(text)],
        }),
        contents,
    }
}

/// `input` as an object: itself when it is one, else wrapped as `{"value":…}`.
fn as_object<'v>(input: &'v Value) -> Cow<'v, Value> {
    if input.is_object() {
        return Cow::Borrowed(input);
    }
    let mut wrapped = Map::new();
    wrapped.insert("value".to_owned(), input.clone());
    Cow::Owned(Value::Object(wrapped))
}

/// A tool output as the object a Gemini function response holds.
fn response_object(output: &str, is_error: bool) -> Value {
    if output.trim_start().starts_with('{')
        && let Ok(object @ Value::Object(_)) = serde_json::from_str::<Value>(output)
    {
        return object;
    }
    let mut wrapped = Map::new();
    let key = if is_error { "error" } else { "output" };
    wrapped.insert(key.to_owned(), Value::String(output.to_owned()));
    Value::Object(wrapped)
}

/// Serializes a payload as pretty JSON (for logs of what was sent, and snapshots).
pub fn to_pretty_json<T: Serialize + ?Sized>(payload: &T) -> String {
    // Serializing these payload types cannot fail: every map key is a string.
    serde_json::to_string_pretty(payload)
        .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}
