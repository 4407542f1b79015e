#version 450
// local_read_copy.frag writing location 0: the application remaps colour
// attachment 1 to location 0 (VkRenderingAttachmentLocationInfoKHR
// {UNUSED, 0}), as the CTS's density-map render_copy cases do.
layout(input_attachment_index = 0, set = 0, binding = 0) uniform subpassInput first;
layout(location = 0) out vec4 copy;
void main() {
    copy = subpassLoad(first);
}
